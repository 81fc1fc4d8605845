# Address scheme of the bed, sourced by the host side (test/vm/bed) and the guests
# (test/vm/guest/net). Flat topology: every NIC of every guest in 198.18.0.0/24, one bridge.
#   host h (0..3), NIC i (0..3):  ethI  198.18.0.<10*(h+1)+i>/24  MAC 52:54:00:18:0h:0i  rxeI
#   host 0: .10 .11 .12 .13   host 1: .20 .21 ...   host 2: .30 ...   host 3: .40 ...
# shellcheck shell=bash
BED_SUBNET=198.18.0.0/24
BED_PREFIX=24
BED_MAX_HOSTS=4
BED_MAX_NICS=4
bed_ip() { echo "198.18.0.$((10 * ($1 + 1) + $2))"; }
bed_mac() { printf '52:54:00:18:%02x:%02x\n' "$1" "$2"; }
# NIC index from a MAC of the scheme ("" if it is not one of ours).
bed_nic_of_mac() {
	case $1 in 52:54:00:18:*) echo $((16#${1##*:})) ;; esac
}
