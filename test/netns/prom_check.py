#!/usr/bin/env python3
"""Check a Prometheus text exposition (format 0.0.4) strictly enough to catch what a
scraper rejects: metric and label names, label value escapes, float values, one HELP and
TYPE per family before its samples, samples of a family together, no duplicate series.
Prints the samples as `name{k=v,...} value` lines (sorted labels) for the test to grep.
Usage: prom_check.py FILE"""
import re
import sys

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*$')


def fail(n, msg):
    sys.exit('prom_check: line %d: %s' % (n, msg))


def parse_labels(n, s):
    labels, i = {}, 0
    while i < len(s):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', s[i:])
        if not m:
            fail(n, 'bad label at %r' % s[i:])
        key, i, val = m.group(1), i + m.end(), ''
        while True:
            if i >= len(s):
                fail(n, 'unterminated label value')
            c = s[i]
            if c == '\\':
                nxt = s[i + 1:i + 2]
                if nxt not in ('\\', '"', 'n'):
                    fail(n, 'bad escape \\%s' % nxt)
                val += '\n' if nxt == 'n' else nxt
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == '\n':
                fail(n, 'newline in label value')
            else:
                val += c
                i += 1
        if key in labels:
            fail(n, 'label %s twice' % key)
        labels[key] = val
        if i < len(s):
            if s[i] != ',':
                fail(n, 'expected , after label %s' % key)
            i += 1
    return labels


def main():
    text = open(sys.argv[1], encoding='utf-8').read()
    if text and not text.endswith('\n'):
        fail(0, 'no newline at the end')
    helps, types, seen, done, series, out = set(), {}, set(), set(), set(), []
    current = None
    for n, line in enumerate(text.split('\n')[:-1], 1):
        if not line.strip():
            continue
        if line.startswith('#'):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ('HELP', 'TYPE'):
                name = parts[2]
                if not NAME.match(name):
                    fail(n, 'bad metric name %r' % name)
                if name in seen:
                    fail(n, '%s for %s after its samples' % (parts[1], name))
                if parts[1] == 'HELP':
                    if name in helps:
                        fail(n, 'second HELP for %s' % name)
                    helps.add(name)
                else:
                    if name in types:
                        fail(n, 'second TYPE for %s' % name)
                    if len(parts) < 4 or parts[3] not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
                        fail(n, 'bad TYPE line')
                    types[name] = parts[3]
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+(-?\d+))?$', line)
        if not m:
            fail(n, 'not a sample: %r' % line)
        name, labels, value = m.group(1), parse_labels(n, m.group(3) or ''), m.group(4)
        try:
            float(value)
        except ValueError:
            if value not in ('NaN', '+Inf', '-Inf'):
                fail(n, 'bad value %r' % value)
        if name != current:
            if name in done:
                fail(n, 'samples of %s not together' % name)
            if current:
                done.add(current)
            current = name
        if name not in types:
            fail(n, 'sample of %s before its TYPE' % name)
        seen.add(name)
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            fail(n, 'duplicate series %s' % line)
        series.add(key)
        out.append('%s{%s} %s' % (name, ','.join('%s=%s' % kv for kv in sorted(labels.items())), value))
    if not series:
        fail(0, 'no samples')
    print('\n'.join(out))


main()
