#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs/DESIGN.md's byte tables against src/seg_format.h's assert rows.

Usage: test_seg_format.py DESIGN.md seg_format.h

Every table of DESIGN.md whose header reads "| offset | size | ..." names
the structures it lays out in backticks (`struct shmlog__lane`; the page-0
table also holds seg_format.h's PLACE rows). Each of its rows must match a
FIELD, LINE or FLEX row of seg_format.h (offset, and size: a FLEX row's size is
not a number in the table; a row naming several fields covers them in a
row), and every such row of seg_format.h must have its row in a table. The
compiler checks seg_format.h's rows against the structures; this checks the
people's description against seg_format.h. Exits 1 listing every difference.
"""
import re
import sys

ROW_RE = re.compile(
    r"^(FIELD|LINE|FLEX|PLACE)\(\s*(struct \w+|\w+)\s*,\s*([\w.]+)\s*,"
    r"\s*(\w+)\s*(?:,\s*(\w+)\s*)?(?:,\s*(\w+)\s*)?\);\s*$")
NAME_RE = re.compile(r"^([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*)")
PAGE0 = "page 0"


def c_rows(path):
    """(struct, field) -> [kind, offset, size or None, used]"""
    rows = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = ROW_RE.match(line)
        if not m:
            continue
        kind = m.group(1)
        if kind == "PLACE":
            # PLACE(name, expression, offset, size)
            key = (PAGE0, m.group(2))
            off, size = int(m.group(4), 0), int(m.group(5), 0)
        elif kind == "FLEX":
            key = (m.group(2), m.group(3))
            off, size = int(m.group(4), 0), None
        else:
            key = (m.group(2), m.group(3))
            off, size = int(m.group(4), 0), int(m.group(5), 0)
        if key in rows:
            sys.exit(f"{path}:{n}: a second row for {key[0]}.{key[1]}")
        rows[key] = [kind, off, size, False, n]
    return rows


def cells(line):
    """A markdown table row's cells (a backslash-escaped | stays)."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def doc_tables(path):
    """[(first line number, [structs], [(line, offset, size, names)])]"""
    tables = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        c = cells(lines[i]) if lines[i].startswith("|") else []
        if len(c) >= 3 and c[0] == "offset" and c[1] == "size":
            structs = re.findall(r"`(struct \w+)`", c[2])
            if PAGE0 in c[2]:
                structs.append(PAGE0)
            start = i + 1
            rows = []
            i += 2  # the header and its |---| line
            while i < len(lines) and lines[i].startswith("|"):
                r = cells(lines[i])
                rows.append((i + 1, r))
                i += 1
            tables.append((start, structs, rows))
        else:
            i += 1
    return tables


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    design, header = sys.argv[1], sys.argv[2]
    rows = c_rows(header)
    errors = []
    tables = doc_tables(design)
    if not tables:
        errors.append(f"{design}: no byte table found")
    named = set()
    for start, structs, trows in tables:
        if not structs:
            errors.append(f"{design}:{start}: the table names no "
                          "`struct shmlog__...` in its header")
            continue
        named.update(structs)
        for ln, r in trows:
            where = f"{design}:{ln}"
            if len(r) < 3:
                errors.append(f"{where}: fewer than 3 cells")
                continue
            m = re.match(r"^(\d+)(?:\.\.(\d+))?$", r[0])
            if not m:
                errors.append(f"{where}: offset {r[0]!r} is not a number")
                continue
            off = int(m.group(1))
            size = int(r[1]) if r[1].isdigit() else None
            if m.group(2) and size is not None and \
                    int(m.group(2)) != off + size - 1:
                errors.append(f"{where}: {r[0]} is not {size} bytes")
            nm = NAME_RE.match(r[2].replace("`", ""))
            if not nm:
                errors.append(f"{where}: no field name in {r[2]!r}")
                continue
            names = nm.group(1).split(", ")
            at, total, ok = off, 0, True
            for name in names:
                hits = [s for s in structs if (s, name) in rows]
                if len(hits) != 1:
                    errors.append(
                        f"{where}: {name} is in "
                        f"{'no' if not hits else 'more than one'} row of "
                        f"{header} for {', '.join(structs)}")
                    ok = False
                    break
                row = rows[(hits[0], name)]
                row[3] = True
                kind, c_off, c_size = row[0], row[1], row[2]
                if c_off != at:
                    errors.append(f"{where}: {name} at byte {at} here, "
                                  f"{c_off} in {header}:{row[4]}")
                    ok = False
                if len(names) == 1:
                    if (size is None) != (kind == "FLEX") or \
                            (size is not None and c_size != size):
                        errors.append(
                            f"{where}: {name} is {r[1]} bytes here, "
                            f"{c_size if c_size is not None else 'flexible'}"
                            f" in {header}:{row[4]}")
                elif c_size is None:
                    errors.append(f"{where}: {name} is flexible in "
                                  f"{header}:{row[4]}")
                    ok = False
                    break
                else:
                    at += c_size
                    total += c_size
            if ok and len(names) > 1 and total != size:
                errors.append(f"{where}: {', '.join(names)} take {total} "
                              f"bytes in {header}, {r[1]} here")
    for (struct, field), row in sorted(rows.items(), key=lambda kv: kv[1][4]):
        if row[3]:
            continue
        if struct in named:
            errors.append(f"{header}:{row[4]}: {struct}.{field} has no row "
                          f"in {design}'s table of {struct}")
        else:
            errors.append(f"{header}:{row[4]}: {struct} has no byte table "
                          f"in {design}")
    for e in errors:
        print(e)
    used = sum(1 for r in rows.values() if r[3])
    print(f"test_seg_format: {len(rows)} rows in {header}, {used} matched, "
          f"{len(errors)} difference(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
