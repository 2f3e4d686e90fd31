#!/usr/bin/env python3
"""Checks relative links (and #anchors) in README.md, docs/*.md, cluster/README.md, jobs/README.md: python3 scripts/ci/doc-links.py ."""
import re, sys, os, glob, unicodedata
root = sys.argv[1]
files = ['README.md'] + sorted(glob.glob('docs/*.md', root_dir=root)) + ['cluster/README.md', 'jobs/README.md']
def slug(h):
    h = h.strip().lower()
    out = []
    for ch in h:
        cat = unicodedata.category(ch)
        if ch in '-_ ' or cat[0] in 'LN':
            out.append(ch)
    return ''.join(out).replace(' ', '-')
def anchors(path):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    seen = {}; res = set()
    for m in re.finditer(r'^#{1,6} (.+)$', text, flags=re.M):
        s = slug(m.group(1)); n = seen.get(s, 0); seen[s] = n + 1
        res.add(s if n == 0 else f'{s}-{n}')
    return res
bad = 0; count = 0
for f in files:
    p = os.path.join(root, f)
    if not os.path.exists(p): continue
    text = open(p, encoding='utf-8').read()
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        target = m.group(1)
        if re.match(r'[a-z]+://', target) or target.startswith('mailto:'): continue
        count += 1
        path, _, frag = target.partition('#')
        tp = os.path.normpath(os.path.join(os.path.dirname(p), path)) if path else p
        if not os.path.exists(tp):
            print(f'{f}: missing target {target}'); bad += 1; continue
        if frag and tp.endswith('.md') and frag not in anchors(tp):
            print(f'{f}: missing anchor {target}'); bad += 1
print(f'{count} relative links checked, {bad} broken')
sys.exit(1 if bad else 0)
