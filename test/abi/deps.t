#!/usr/bin/env bash
# The library's files depend on each other in one direction only, and so do the doctor's
# (src/doctor/, over the library) and the tools' (src/tools/): for every object, each
# symbol it leaves undefined is mapped (nm) to the object that defines it,
# and no two objects may depend on each other, directly or around a cycle. A cycle is
# printed with the symbols that close it (one file per concern: a cycle means two
# concerns are tangled, e.g. gid.c calling back into route.c).
set -eu
cd "$(dirname "$0")/../.."
command -v nm >/dev/null || { echo "skip: nm (binutils) not installed"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }

# The library alone, the doctor over it, the tools (which never link the library): each
# program's objects, so a symbol two programs define (main) is never taken for a use.
check() { # label objects...
	local label=$1 o
	shift
	echo "$label: $# objects"
	for o in "$@"; do
	nm -g "$o" | awk -v o="$(basename "$o" .o)" '$1 == "U" { print o, "U", $2; next }
		NF == 3 && $2 ~ /^[A-TV-Z]$/ { print o, "D", $3 }'
	done | python3 -c '
import sys
defs, uses = {}, {}
for line in sys.stdin:
    o, kind, sym = line.split()
    if kind == "D":
        defs[sym] = o
    else:
        uses.setdefault(o, set()).add(sym)
edges = {}
for o, syms in uses.items():
    for s in syms:
        d = defs.get(s)
        if d and d != o:
            edges.setdefault(o, {}).setdefault(d, set()).add(s)
nodes = sorted(set(defs.values()) | set(uses))
# Tarjan: every strongly connected component of more than one object is a cycle.
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1
    stack.append(v); on.add(v)
    for w in sorted(edges.get(v, {})):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        if len(c) > 1:
            sccs.append(sorted(c))
sys.setrecursionlimit(10000)
for v in nodes:
    if v not in index:
        visit(v)
def path(a, b, inside):
    # shortest path a -> b inside the component (BFS)
    prev, todo = {a: None}, [a]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges.get(v, {})):
            if w in inside and w not in prev:
                prev[w] = v; todo.append(w)
    p, v = [], b
    while v is not None:
        p.append(v); v = prev[v]
    return p[::-1]
for c in sccs:
    a = c[0]
    b = next(w for w in sorted(edges[a]) if w in c)
    cyc = [a] + path(b, a, set(c))
    print("FAIL: dependency cycle among %s:" % ", ".join(x + ".o" for x in c))
    for x, y in zip(cyc, cyc[1:]):
        syms = sorted(edges[x][y])
        print("  %s.o -> %s.o  (%s%s)" % (x, y, ", ".join(syms[:4]), ", ..." if len(syms) > 4 else ""))
if sccs:
    sys.exit(1)
print("ok: %d objects, %d dependencies, no cycle" % (len(nodes), sum(len(e) for e in edges.values())))
'
}

objs() { # sources' dir, objects' dir [a source built elsewhere]: every source's object
	local c o
	for c in "$1"/*.c; do # objects of today's sources only: not one left from a removed file
		[ "$(basename "$c" .c)" = "${3:-}" ] && continue
		o=$2/$(basename "$c" .c).o
		[ -f "$o" ] || { echo "FAIL: $o not built (make)" >&2; return 1; }
		echo "$o"
	done
}
lib=$(objs src build/obj/src) || exit 1
# doctor_mpi.c is roce-doctor-mpi's main, built where Open MPI is (build/obj/mpi/)
doctor=$(objs src/doctor build/obj/src/doctor doctor_mpi) || exit 1
tools=$(objs src/tools build/obj/src/tools) || exit 1
mpi=$(ls build/obj/mpi/doctor_mpi.o 2>/dev/null || true)
rc=0
# shellcheck disable=SC2086 # the lists are words
check library $lib || rc=1
# shellcheck disable=SC2086
check doctor $lib $doctor $mpi || rc=1
# shellcheck disable=SC2086
check tools $tools || rc=1
exit $rc
