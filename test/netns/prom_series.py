#!/usr/bin/env python3
"""Turn roce-doctor's exposition files into `promtool test rules` input_series: what
node-exporter's textfile collector would expose, scraped once a step, as a host's textfile
changes over time.

Usage: prom_series.py INSTANCE=PHASE[,PHASE...] ...
PHASE is FILE:STEPS (the file's samples for STEPS steps) or stale:STEPS (the last file
left as it was: the doctor stopped running, node-exporter keeps exposing it).
Every series gets instance=INSTANCE and job="node", as a scrape would add; a series absent
from a phase is missing ("_") there. roce_doctor_last_run_timestamp_seconds is the one value
not taken from the file: the doctor's wall-clock time is mapped to the test's clock (the
step's time in seconds; frozen in a stale phase), so rules on the file's age can be tested.
Prints YAML (one input_series list item per series) on stdout."""
import re
import sys

STEP_S = 60
TS = 'roce_doctor_last_run_timestamp_seconds'


def parse(path):
    """{(name, ((label, value), ...)): value} of an exposition file."""
    out = {}
    for n, line in enumerate(open(path), 1):
        line = line.rstrip('\n')
        if not line or line.startswith('#'):
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            sys.exit('prom_series: %s:%d: not a sample: %r' % (path, n, line))
        labels = tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                         m.group(3) or '')))
        out[(m.group(1), labels)] = m.group(4)
    return out


def main():
    series = {}  # (name, labels) -> [value or '_' per step]
    for arg in sys.argv[1:]:
        inst, phases = arg.split('=', 1)
        steps, last, frozen = 0, None, None
        for ph in phases.split(','):
            what, n = ph.rsplit(':', 1)
            n = int(n)
            if what != 'stale':
                last, frozen = parse(what), None
            elif last is None:
                sys.exit('prom_series: %s: stale before any file' % inst)
            for i in range(n):
                t = (steps + i) * STEP_S
                for (name, labels), v in last.items():
                    if name == TS:
                        if what == 'stale':
                            frozen = frozen if frozen is not None else str(t - STEP_S)
                            v = frozen
                        else:
                            v = str(t)
                    key = (name, labels + (('instance', inst), ('job', 'node')))
                    col = series.setdefault(key, [])
                    col.extend(['_'] * (steps + i - len(col)))
                    col.append(v)
            steps += n
        for key, col in series.items():
            if dict(key[1]).get('instance') == inst:
                col.extend(['_'] * (steps - len(col)))
    for (name, labels), col in sorted(series.items()):
        # empty labels are no labels to Prometheus (node-exporter drops them too)
        ls = ','.join('%s="%s"' % kv for kv in sorted(labels) if kv[1] != '')
        print("  - series: '%s{%s}'" % (name, ls.replace("'", "''")))
        print("    values: '%s'" % ' '.join(col))


if __name__ == '__main__':
    main()
