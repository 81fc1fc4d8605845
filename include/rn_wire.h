/* SPDX-License-Identifier: MIT */
/*
 * The transport's wire formats (src/wire.c): the listen handle NCCL carries
 * between ranks and the out-of-band handshake messages. Pure encode/decode, no
 * I/O, so the parsers can be fuzzed on their own (test/fuzz/).
 *
 * Every integer is big-endian; fields have fixed sizes and offsets except the
 * verdict's two texts, which are length-prefixed. A decoder rejects a wrong magic,
 * another version, an unknown type, a length that is not the one the type and its
 * counts imply, fixed strings without a terminator and texts with a NUL inside.
 *
 * Handle (RN_HANDLE_SIZE = 128 bytes):
 *   0  be32 magic "RNH1"   4 be16 version   6 u8 family (4|6)   7 u8 0
 *   8  be16 port           10 be16 0        12 16 B address (IPv4 in the first 4)
 *   28 be64 nonce          36 u8 members (the listener's vNIC: 1..RN_VNIC_MAX)
 *   37..63 zero
 *   64..127 the connecting side's private area: zero in a fresh handle;
 *           rn_connect() keeps a cookie and a random key there (data only: its
 *           state is found in a registry by the handle's address and that key).
 *
 * Message = 24-byte header + payload:
 *   0 be32 magic "RNHS"  4 be16 version  6 be16 type  8 be32 payload length
 *   12 be32 0            16 be64 nonce (the handle's; a stray connection fails here)
 * HELLO   (160 + 136 * (members - 1) + 4 * nqps bytes, version 4): role, nqps, tc, sl,
 *         the facts of member 0, FIFO and sizes addresses + member 0's rkeys, the
 *         member count; then per further member its facts and its two rkeys (the
 *         control block is registered on every member's PD); then nqps QP numbers. QP q
 *         belongs to member q % members on each side (see src/comm.c). Before version 4
 *         HELLO had no members and CTS entries were 32 bytes; from 4 to 7 they were 64;
 *         from 8 they are 32 when the receiver has one member, 64 when it has more, and
 *         the control blocks of both ends are laid out by that size (src/comm.c): a HELLO
 *         or a handle older than RN_WIRE_HELLO_MIN is refused (-EPROTO), so mixed
 *         versions fail at connect.
 * VERDICT (12 + m + f bytes in version 2; 28 + the six texts' bytes from 3): be16 cause,
 *         u8 severity, u8 flags (bit 0 refused, bit 1 extended), be32 m, be32 f, and
 *         when extended be32 h, be32 p, be32 ph, be32 a; then the message (m bytes),
 *         the fix (f), and when extended the host the fix runs on (h, "" = the
 *         sender), the part to run first (p) and its host (ph), the advice (a): whole,
 *         without NULs; m, f <= RN_VERDICT_TEXT_MAX, the others <= RN_VERDICT_AUX_MAX.
 *         A cause this build does not know
 *         (a newer peer's) is kept as a number and shown as "unknown cause N".
 *         From version 5, byte 157 of HELLO counts spare NIC pairs (0..RN_SPARES_MAX,
 *         src/failover.c), appended after the QP numbers: per spare its NIC's facts
 *         (128), the control block's rkey on that NIC (4), then nqps QP numbers. The
 *         receiver offers at most as many as the sender did; spare j of one end pairs
 *         with spare j of the other.
 * READY   (0 or 4 bytes): the connector's QPs are in RTS; be32 bit j: the connector's
 *         path check passed spare j (the receiver moves a comm only to a pair both passed).
 */
#ifndef RN_WIRE_H
#define RN_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_param.h"
#include "rn_path.h"

#define RN_HANDLE_MAGIC 0x524e4831u /* "RNH1" */
#define RN_WIRE_MAGIC 0x524e4853u   /* "RNHS" */
/* 2: VERDICT carries whole texts; 3: and where fixes run; 4: vNIC members, 64-byte CTS */
/* 5: spare NIC pairs (failover) in HELLO, a READY mask; 6: recovery (src/failover.c); 7: a
 * vNIC's member loss; 8: a receiver of one NIC writes 32-byte CTS entries (rn_conn.h); 9:
 * failover mailboxes of 176 bytes, a control block of 3 pages (rn_conn.h) */
#define RN_WIRE_VERSION 9
#define RN_WIRE_VERSION_MIN 2 /* the oldest a header decoder accepts (a VERDICT without hosts) */
/* the oldest handle and HELLO: the data path changed in 5, the failover messages over RDMA in
 * 6 (a peer of 5 would block a pair's queue with a request it never takes), a vNIC's member
 * loss in 7 (a sender of 6 posts no receives for the receiver's DROP), the CTS entry's size
 * and so the control block's layout in 8 (a peer of 7 would read 32-byte entries as 64),
 * the failover mailboxes' size in 9 (a peer of 8 would write its moves 256 bytes apart) */
#define RN_WIRE_HELLO_MIN 9
#define RN_HANDLE_PUBLIC 64 /* bytes of the handle the listener fills */

#define RN_MAX_QPS 128      /* data QPs per connection, as net_ib's NCCL_IB_MAX_QPS */

enum rn_msg_type {
	RN_MSG_HELLO = 1,
	RN_MSG_VERDICT = 2,
	RN_MSG_READY = 3,
};

#define RN_WIRE_HDR_LEN 24
#define RN_HELLO_FIXED_LEN 160
#define RN_HELLO_MEMBER_LEN 136 /* facts (128) + FIFO rkey + sizes rkey */
#define RN_HELLO_SPARE_LEN 132  /* facts (128) + control block rkey, then its QP numbers */
#define RN_HELLO_MAX_LEN \
	(RN_HELLO_FIXED_LEN + RN_HELLO_MEMBER_LEN * (RN_VNIC_MAX - 1) + 4 * RN_MAX_QPS + \
	 RN_SPARES_MAX * (RN_HELLO_SPARE_LEN + 4 * RN_MAX_QPS))
#define RN_VERDICT_FIXED_LEN 12
#define RN_VERDICT_EXT_LEN 16 /* version 3: four more text lengths */
#define RN_VERDICT_NTEXTS 6
#define RN_VERDICT_FLAG_REFUSED \
	0x01 /* flags byte (not enum rn_verdict_kind's RN_VERDICT_REFUSED) */
#define RN_VERDICT_FLAG_EXT 0x02
/* A finding's text is a few hundred bytes; far beyond this is a bug, not a NIC list. */
#define RN_VERDICT_TEXT_MAX 8192
/* A host name, a line of sysctls, a sentence: far beyond this is a bug too. */
#define RN_VERDICT_AUX_MAX 1024
#define RN_WIRE_MAX_PAYLOAD \
	(RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN + 2 * RN_VERDICT_TEXT_MAX + \
	 (RN_VERDICT_NTEXTS - 2) * RN_VERDICT_AUX_MAX) /* the longest */
#define RN_WIRE_MAX_MSG (RN_WIRE_HDR_LEN + RN_WIRE_MAX_PAYLOAD)

enum rn_role {
	RN_ROLE_SEND = 1, /* rn_connect's side */
	RN_ROLE_RECV = 2, /* rn_accept's side */
};

struct rn_handle_info {
	struct sockaddr_storage addr; /* the listener's OOB address */
	uint64_t nonce;
	int members;                  /* NICs of the listener's device (0 encodes as 1) */
};

struct rn_msg_hdr {
	uint16_t type;
	uint32_t len;
	uint64_t nonce;
};

/* What a vNIC member beyond the first advertises. */
struct rn_hello_member {
	struct rn_peer_facts facts;
	uint32_t fifo_rkey, sizes_rkey;
};

/* A spare NIC pair's end (failover): its NIC, and its QPs (as many as the comm's). */
struct rn_hello_spare {
	struct rn_peer_facts facts;
	uint32_t ctrl_rkey; /* the control block (FIFO or sizes) on this NIC */
	uint32_t qpn[RN_MAX_QPS];
};

struct rn_hello {
	int role;                   /* enum rn_role */
	int nqps;
	int tc, sl;                 /* the sender's choice; the receiver follows it */
	struct rn_peer_facts facts; /* member 0 (the only one of a physical device) */
	uint64_t fifo_addr;         /* sender: its CTS FIFO; receiver: 0 */
	uint32_t fifo_rkey;         /* member 0's */
	uint64_t sizes_addr;        /* receiver: where multi-recv sizes land; sender: 0 */
	uint32_t sizes_rkey;        /* member 0's */
	int members;                /* NICs behind this end (0 encodes as 1) */
	struct rn_hello_member more[RN_VNIC_MAX - 1]; /* members 1..members-1 */
	uint32_t qpn[RN_MAX_QPS];
	int spares;                                   /* spare NIC pairs offered (version 5) */
	struct rn_hello_spare spare[RN_SPARES_MAX];
};

struct rn_verdict_msg {
	int refused;               /* the sender of this message refuses the path */
	struct rn_finding finding; /* owned: rn_verdict_msg_clear() */
};

void rn_verdict_msg_clear(struct rn_verdict_msg *m);

/* Fill @buf (>= RN_HANDLE_SIZE) and zero its private area. 0 or -EINVAL. */
int rn_handle_encode(const struct rn_handle_info *h, void *buf, size_t len);
/* 0, or -EBADMSG (magic, family, port), -EPROTO (version), -EINVAL (too short). */
int rn_handle_decode(const void *buf, size_t len, struct rn_handle_info *h);

/*
 * Encoders return the whole message's length (header included); @buf >= RN_WIRE_MAX_MSG.
 * A verdict text over RN_VERDICT_TEXT_MAX is sent as a short note saying so (the
 * sender logs it whole), never cut.
 */
size_t rn_msg_encode_hello(uint8_t *buf, uint64_t nonce, const struct rn_hello *m);
size_t rn_msg_encode_verdict(uint8_t *buf, uint64_t nonce, const struct rn_verdict_msg *m);
size_t rn_msg_encode_ready(uint8_t *buf, uint64_t nonce);
/* READY with the spare pairs the connector's check passed (bit j: spare j). */
size_t rn_msg_encode_ready_mask(uint8_t *buf, uint64_t nonce, uint32_t spares_ok);

/*
 * Validate a header (@len >= RN_WIRE_HDR_LEN): 0, -EBADMSG (magic, type, length
 * that does not fit the type), -EPROTO (version), -EMSGSIZE (length beyond the maximum).
 */
int rn_msg_decode_hdr(const uint8_t *buf, size_t len, struct rn_msg_hdr *h);
/*
 * Payload decoders: 0 or -EBADMSG. The verdict decoder replaces @m (empty or
 * holding a decoded verdict) and may also return -ENOMEM.
 */
int rn_msg_decode_hello(const uint8_t *p, size_t len, struct rn_hello *m);
int rn_msg_decode_verdict(const uint8_t *p, size_t len, struct rn_verdict_msg *m);
/* READY's payload: @spares_ok = its mask (0 for an empty READY). 0 or -EBADMSG. */
int rn_msg_decode_ready(const uint8_t *p, size_t len, uint32_t *spares_ok);

/* "198.18.0.1:41000" / "[fd00::1]:41000" into @buf; returns @buf. */
const char *rn_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len);

#endif /* RN_WIRE_H */
