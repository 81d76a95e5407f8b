#!/usr/bin/env python3
"""Checks orbit-trace against hand-written fixtures (fixtures/README says what they hold).
Usage: check_trace.py TOOL FIXTURES {fixtures|overlap|errors}
  fixtures: the Chrome trace's structure, the summary's figures computed by hand, the warnings,
            and the PNG's bytes (signature, chunk CRCs, zlib stream, size);
  overlap:  generated tracks with overlapping, equal and zero-length events still nest;
  errors:   a missing DIR, an empty DIR and an unwritable output fail with exit 1 and the path."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

TOOL, FIXTURES, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL: ' + what)


def run(*args):
    p = subprocess.run([TOOL] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def ns(us):
    """Chrome times are microseconds with three decimals: back to exact nanoseconds."""
    return round(float(us) * 1000)


def check_chrome(path):
    """Every track sorted by start and properly nested; every flow id has one start and one finish
    on a step event that exists. Returns the parsed events."""
    with open(path) as f:
        events = json.load(f)['traceEvents']
    tracks = {}
    for e in events:
        if e['ph'] == 'X':
            tracks.setdefault((e['pid'], e['tid']), []).append(e)
    for key, evs in tracks.items():
        stack = []
        last = None
        for e in evs:
            t0, t1 = ns(e['ts']), ns(e['ts']) + ns(e['dur'])
            check(e['dur'] >= 0, 'negative duration %s' % e)
            check(last is None or t0 >= last, 'track %s not sorted by start at %s' % (key, e))
            last = t0
            while stack and stack[-1] <= t0:
                stack.pop()
            check(not stack or t1 <= stack[-1],
                  'track %s: %s overlaps its parent\'s end %d' % (key, e, stack[-1] if stack else 0))
            stack.append(t1)
    flows = {}
    for e in events:
        if e['ph'] in ('s', 'f'):
            flows.setdefault(e['id'], []).append(e)
            check(e.get('cat'), 'flow event without cat: %s' % e)
            check(any(x['tid'] == e['tid'] and ns(x['ts']) <= ns(e['ts']) <= ns(x['ts']) + ns(x['dur'])
                      for x in tracks.get((e['pid'], e['tid']), [])),
                  'flow event %s is on no slice' % e)
    for fid, fl in flows.items():
        check(sorted(x['ph'] for x in fl) == ['f', 's'], 'flow %s is not one start + one finish: %s' % (fid, fl))
        check(len({x['cat'] for x in fl}) == 1, 'flow %s: cat differs' % fid)
        for x in fl:
            if x['ph'] == 'f':
                check(x.get('bp') == 'e', 'flow finish %s lacks bp e' % fid)
    return events, tracks, flows


def check_png(path, want_w):
    with open(path, 'rb') as f:
        data = f.read()
    check(data[:8] == b'\x89PNG\r\n\x1a\n', 'PNG signature')
    pos, chunks = 8, []
    while pos < len(data):
        n, = struct.unpack('>I', data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack('>I', data[pos + 8 + n:pos + 12 + n])
        check(zlib.crc32(kind + body) == crc, 'PNG chunk %s CRC' % kind)
        chunks.append((kind, body))
        pos += 12 + n
    check([c[0] for c in chunks][:1] == [b'IHDR'] and chunks[-1][0] == b'IEND', 'PNG chunk order')
    w, h, depth, ctype = struct.unpack('>IIBB', chunks[0][1][:10])
    check(w == want_w and 100 < h < 4000, 'PNG IHDR size %dx%d' % (w, h))
    check(depth == 8 and ctype == 2, 'PNG is RGB 8-bit')
    raw = zlib.decompress(b''.join(b for k, b in chunks if k == b'IDAT'))  # checks Adler-32 too
    check(len(raw) == h * (3 * w + 1), 'PNG scanlines: %d bytes for %dx%d' % (len(raw), w, h))
    check(all(raw[y * (3 * w + 1)] == 0 for y in range(h)), 'PNG filter bytes')
    check(len(set(raw)) > 10, 'PNG is not blank')


def fixtures():
    tmp = tempfile.mkdtemp(prefix='orbit-trace-test.')
    try:
        d = os.path.join(tmp, 'run')
        shutil.copytree(FIXTURES, d)
        rc, out, err = run('--json', os.path.join(tmp, 's.json'), '--plot', os.path.join(tmp, 't.png'), d)
        print(out + err)
        check(rc == 0, 'exit status %d' % rc)
        events, tracks, flows = check_chrome(os.path.join(d, 'trace.json'))  # the default -o
        names = {e['pid']: e['args']['name'] for e in events if e['ph'] == 'M' and e['name'] == 'process_name'}
        check('rank 2 comm 00000000000000aa' in names.values(), 'process names: %s' % names)
        calls = [e for e in events if e['ph'] == 'X' and e['tid'] == 0]
        steps = [e for e in events if e['ph'] == 'X' and e['tid'] > 0]
        check(len(calls) == 15 and len(steps) == 10, '%d calls, %d steps' % (len(calls), len(steps)))
        check(len(flows) == 4, '4 flows (3 around the ring of seq 1, 1 for the send/recv), got %d' % len(flows))
        ar = [e for e in calls if e['name'] == 'allreduce' and e['args']['seq'] == 1 and 'aa' in names[e['pid']]]
        check(len(ar) == 3 and all(e['args']['bytes'] == 6000000 and e['args']['algo'] == 'ring' for e in ar),
              'allreduce seq 1 args')
        check(min(ns(e['ts']) for e in events if e['ph'] == 'X') == 0, 'times relative to the earliest event')
        check(not any('clipped_us' in e['args'] for e in calls + steps), 'nothing clipped in the fixtures')

        with open(os.path.join(tmp, 's.json')) as f:
            s = json.load(f)
        rows = {(r['coll'], r['nranks'], r['bucket']): r for r in s['colls']}
        r = rows.get(('allreduce', 3, '4 MiB-8 MiB'))
        check(r and r['calls'] == 3 and r['total_ns'] == 13000000 and r['median_ns'] == 6000000,
              'allreduce row: %s' % r)
        check(r and abs(r['algbw_GBps'] - 1.0) < 1e-6 and abs(r['busbw_GBps'] - 4 / 3) < 1e-5,
              'allreduce 6 MB in 6 ms: algbw 1, busbw 2(n-1)/n = 4/3: %s' % r)
        r = rows.get(('broadcast', 3, '1 MiB-2 MiB'))
        check(r and abs(r['busbw_GBps'] - 0.524288) < 1e-6, 'broadcast busbw = algbw: %s' % r)
        check(('send', 3, '512 B-1 KiB') in rows and ('barrier', 2, '0 B') in rows, 'send and barrier rows')

        # Straggler figures by hand. allreduce seq 1: ranks 0,1 start at 10 ms, rank 2 at 15:
        # 5 + 5 ms. seq 2: rank 0 [20, 22], rank 1 [21, 26], rank 2 at 25: (22-20) + (25-21) = 6 ms.
        # seq 0: all at once, the tie goes to rank 0 with no wait. Per-rank allreduce time:
        # 9 + 12 + 3 = 24 ms. Broadcast: rank 0 waits 0.5 ms of 2 + 1.5 ms (rank 1's line is cut).
        ar = {e['rank']: e for e in s['stragglers']['allreduce'] if e['comm'] == '00000000000000aa'}
        check(set(ar) == {0, 2}, 'allreduce stragglers are ranks 0 (tie) and 2: %s' % ar)
        check(ar.get(2, {}).get('wait_ns') == 16000000 and ar[2]['last_calls'] == 2 and
              abs(ar[2]['share'] - 16 / 24) < 1e-5 and ar[2]['call_time_ns'] == 24000000,
              'rank 2 charged 16 ms of 24 over 2 calls: %s' % ar.get(2))
        check(ar.get(0, {}).get('wait_ns') == 0 and ar[0]['last_calls'] == 1, 'rank 0: the tie, no wait')
        bc = s['stragglers']['broadcast']
        check(len(bc) == 1 and bc[0]['rank'] == 2 and bc[0]['wait_ns'] == 500000 and
              abs(bc[0]['share'] - 0.5 / 3.5) < 1e-5, 'broadcast straggler: %s' % bc)
        check('rank 2 (comm 00000000000000aa) made the others wait 66.7% of allreduce time (16.000 ms over 2 calls)'
              in out, 'the straggler line in the text summary')
        st = s['steps']
        check(st['count'] == 10 and st['time_ns'] == 14800000 and st['wait_ns'] == 9200000 and
              st['move_ns'] == 5400000 and st['reduce_ns'] == 200000, 'step sums: %s' % st)
        check(s['clock_error_ns_max'] == 2500, 'largest clock error')
        check(s['dropped'] == {'calls': 1, 'steps': 3}, 'dropped')
        check(s['missing'] == [{'comm': '00000000000000bb', 'rank': 1}], 'missing: %s' % s['missing'])
        check(len(s['truncated']) == 1 and s['truncated'][0].endswith('orbit-00000000000000aa-r1.trace'),
              'truncated: %s' % s['truncated'])

        check('comm 00000000000000bb: no trace from rank 1' in err, 'missing-rank warning')
        check("orbit-00000000000000aa-r1.trace ends without 'end'" in err, 'truncated-file warning')
        check("orbit-00000000000000aa-r1.trace:10: malformed 'call' record" in err, 'malformed line: file and line')
        check(err.count("unknown record '") == 1 and "'marker'" in err, 'one warning for unknown records')
        check_png(os.path.join(tmp, 't.png'), 1600)
    finally:
        shutil.rmtree(tmp)


def overlap():
    """One rank whose calls and steps overlap in every way: the output must still nest."""
    tmp = tempfile.mkdtemp(prefix='orbit-trace-test.')
    try:
        rnd = random.Random(7)
        lines = ['orbit-trace 1', 'rank 0 nranks 1 comm 0123456789abcdef host h pid 1',
                 'clock offset_ns 0 error_ns 0', 'dropped 0 0']
        for i in range(200):
            t0 = 1000 * rnd.randrange(0, 50)
            t1 = t0 + 1000 * rnd.choice([0, 0, 1, 3, 10])
            lines.append('call %d %d allreduce 1 float32 sum -1 4 ring simple 1 shm %d %d OK' % (i, i, t0, t1))
            for k in range(2):
                t1 = t0 + rnd.choice([0, 500, 4000])
                lines.append('step %d %d %d copy -1 -1 4 %d %d 0 0 0' % (i, k % 2, k, t0, t1))
        lines.append('end')
        with open(os.path.join(tmp, 'orbit-0123456789abcdef-r0.trace'), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        rc, out, err = run('-o', os.path.join(tmp, 'o.json'), tmp)
        check(rc == 0, 'exit status %d: %s' % (rc, err))
        _, tracks, _ = check_chrome(os.path.join(tmp, 'o.json'))
        check(sum(len(v) for v in tracks.values()) == 600, 'every event written')
        # Cut only what truly overlaps: an event is clipped only when another started strictly
        # before it and ended inside it (equal starts nest, the longer one outside).
        nclipped = 0
        for evs in tracks.values():
            for e in evs:
                if 'clipped_us' not in e['args']:
                    continue
                nclipped += 1
                t0, end = ns(e['ts']), ns(e['ts']) + ns(e['dur']) + ns(e['args']['clipped_us'])
                check(any(ns(o['ts']) < t0 < ns(o['ts']) + ns(o['dur']) < end for o in evs),
                      'clipped with no partial overlap: %s' % e)
        check(nclipped > 0, 'the generated tracks do overlap')
    finally:
        shutil.rmtree(tmp)


def errors():
    tmp = tempfile.mkdtemp(prefix='orbit-trace-test.')
    try:
        gone = os.path.join(tmp, 'no-such-dir')
        rc, out, err = run(gone)
        check(rc == 1 and gone in err, 'missing DIR: exit %d, %r' % (rc, err))
        empty = os.path.join(tmp, 'empty')
        os.mkdir(empty)
        rc, out, err = run(empty)
        check(rc == 1 and empty in err and 'ORBIT_TRACE' in err, 'empty DIR: exit %d, %r' % (rc, err))
        bad = os.path.join(gone, 'x.json')
        rc, out, err = run('-o', bad, FIXTURES)
        check(rc == 1 and bad in err, 'unwritable -o: exit %d, %r' % (rc, err))
        rc, out, err = run('-h')
        check(rc == 0 and 'usage: orbit-trace' in out, '-h prints usage')
        rc, out, err = run()
        check(rc == 1 and 'usage' in err, 'no DIR: usage on stderr, exit 1')
    finally:
        shutil.rmtree(tmp)


{'fixtures': fixtures, 'overlap': overlap, 'errors': errors}[MODE]()
if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('ok: %s' % MODE)
