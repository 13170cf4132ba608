#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""otlp_check.py MODE FILE.txt — reads an OTLP ExportProfilesServiceRequest as `protoc
--decode` prints it (text format, decoded against the UPSTREAM .proto files by the caller)
and checks or summarizes it. Python's standard library only.

  check FILE     the dictionary's rules: every table present with its zero value at index 0
                 (string_table[0] == ""), every index in range, attribute keys unique per
                 sample; exit 1 and say why otherwise
  stacks FILE    one line per distinct stack, "root;...;leaf COUNT" (function names, inline
                 frames innermost last), counts summed over every resource and profile (a
                 sample's values, or its timestamps when it has no values), sorted
  samples FILE   one line per sample: "key=value,... | root;...;leaf COUNT" (resource
                 attributes, then the sample's attributes, then link=TRACE/SPAN when linked)
  resources FILE one line per resource: its attributes "key=value,..." in order
  content FILE   what a conversion of a JFR file says whatever the resources it was given:
                 each profile's period and time range, each sample as `samples` prints it
                 without the resource's attributes, sorted
  content-sha X...  for each X (the request), X.txt decoded: the sha256 of its content into
                 X.sha (one run for many: the upload tests hash every body they receive)
  names FILE     "mapping PATH BUILD_ID" per mapping, "function NAME FILE" per function,
                 "line NAME LINE" per location line
"""
import hashlib
import os
import re
import sys


def parse(text):
    """Text format -> nested dict: every field a list of values (scalars or dicts)."""
    root, stack = {}, []
    cur = root
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        m = re.match(r"^(\w+) \{$", line)
        if m:
            child = {}
            cur.setdefault(m.group(1), []).append(child)
            stack.append(cur)
            cur = child
            continue
        m = re.match(r"^(\w+): (.*)$", line)
        if not m:
            raise SystemExit("cannot parse line: %r" % raw)
        v = m.group(2)
        if v.startswith('"'):
            v = bytes(v[1:-1], "latin-1").decode("unicode_escape").encode("latin-1")
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                pass
        else:
            v = int(v) if re.match(r"^-?\d+$", v) else v
        cur.setdefault(m.group(1), []).append(v)
    return root


def one(d, k, default=0):
    v = d.get(k)
    return v[0] if v else default


def load(path):
    req = parse(open(path).read())
    return req, one(req, "dictionary", {})


def anyvalue(v):
    for k in ("string_value", "int_value", "bool_value", "double_value"):
        if k in v:
            return v[k][0]
    return ""


def frames(d, stack_index):
    """Function names of a stack, root first (a location's lines innermost first)."""
    locs, funcs, strs = d.get("location_table", []), d.get("function_table", []), d["string_table"]
    st = d.get("stack_table", [])[stack_index]
    names = []
    for li in st.get("location_indices", []):
        lines = locs[li].get("lines", [])
        if not lines:
            names.append("[unknown]")
            continue
        names.extend(strs[one(funcs[one(l, "function_index")], "name_strindex")] for l in lines)
    return list(reversed(names))


def samples(req, d):
    for rp in req.get("resource_profiles", []):
        res = one(rp, "resource", {})
        rattrs = [(a["key"][0], anyvalue(one(a, "value", {}))) for a in res.get("attributes", [])]
        for sp in rp.get("scope_profiles", []):
            for prof in sp.get("profiles", []):
                for s in prof.get("samples", []):
                    n = sum(s["values"]) if "values" in s else len(s.get("timestamps_unix_nano", []))
                    yield rattrs, s, n


def sample_attrs(d, s):
    strs, attrs = d["string_table"], d.get("attribute_table", [])
    out = []
    for ai in s.get("attribute_indices", []):
        a = attrs[ai]
        out.append((strs[one(a, "key_strindex")], anyvalue(one(a, "value", {}))))
    return out


def check(req, d):
    errs = []
    need = ("mapping_table", "location_table", "function_table", "link_table", "string_table",
            "attribute_table", "stack_table")
    for t in need:
        if not d.get(t):
            errs.append("no %s (index 0 must be present)" % t)
    if errs:
        return errs
    if d["string_table"][0] != "":
        errs.append("string_table[0] is %r" % d["string_table"][0])
    for t in need[:-1]:
        z = d[t][0]
        if t == "link_table":
            if any(raw(one(z, f, b"")).strip(b"\0") for f in ("trace_id", "span_id")):
                errs.append("link_table[0] is not zero")
        elif t != "string_table" and z:
            errs.append("%s[0] is not the zero value: %r" % (t, z))
    if d["stack_table"][0]:
        errs.append("stack_table[0] is not empty")
    n = {t: len(d[t]) for t in need}
    for st in d["stack_table"]:
        for li in st.get("location_indices", []):
            if not 0 < li < n["location_table"]:
                errs.append("stack refers to location %d" % li)
    for loc in d["location_table"]:
        if not 0 <= one(loc, "mapping_index") < n["mapping_table"]:
            errs.append("location refers to mapping %d" % one(loc, "mapping_index"))
        for l in loc.get("lines", []):
            if not 0 < one(l, "function_index") < n["function_table"]:
                errs.append("line refers to function %d" % one(l, "function_index"))
    for f in d["function_table"]:
        for k in ("name_strindex", "filename_strindex", "system_name_strindex"):
            if not 0 <= one(f, k) < n["string_table"]:
                errs.append("function %s out of range" % k)
    for m in d["mapping_table"]:
        if not 0 <= one(m, "filename_strindex") < n["string_table"]:
            errs.append("mapping filename out of range")
    for a in d["attribute_table"][1:]:
        if not 0 < one(a, "key_strindex") < n["string_table"]:
            errs.append("attribute key out of range")
    for _, s, _ in samples(req, d):
        if not 0 < one(s, "stack_index") < n["stack_table"]:
            errs.append("sample refers to stack %d" % one(s, "stack_index"))
        if not 0 <= one(s, "link_index") < n["link_table"]:
            errs.append("sample refers to link %d" % one(s, "link_index"))
        for ai in s.get("attribute_indices", []):
            if not 0 < ai < n["attribute_table"]:
                errs.append("sample refers to attribute %d" % ai)
        keys = [k for k, _ in sample_attrs(d, s)] if not errs else []
        if len(keys) != len(set(keys)):
            errs.append("a sample repeats an attribute key: %r" % keys)
    return errs[:20]


def raw(v):
    """A bytes field's bytes (parse() decodes those that happen to be UTF-8)."""
    return v.encode("utf-8") if isinstance(v, str) else v


def hexb(v):
    return raw(v).hex()


def content(req, d):
    links, lines = d.get("link_table", []), []
    for rp in req.get("resource_profiles", []):
        for sp in rp.get("scope_profiles", []):
            for p in sp.get("profiles", []):
                lines.append("profile period=%s time=%s duration=%s" % (
                    one(p, "period"), one(p, "time_unix_nano"), one(p, "duration_nano")))
    for _, s, n in samples(req, d):
        kv = ["%s=%s" % a for a in sample_attrs(d, s)]
        li = one(s, "link_index")
        if li:
            kv.append("link=%s/%s" % (hexb(one(links[li], "trace_id", "")),
                                      hexb(one(links[li], "span_id", ""))))
        lines.append("%s | %s %d" % (",".join(kv), ";".join(frames(d, one(s, "stack_index"))), n))
    return "\n".join(sorted(lines)) + "\n"


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "content-sha":
        for p in sys.argv[2:]:
            with open(p + ".sha.tmp", "w") as f:
                f.write(hashlib.sha256(content(*load(p + ".txt")).encode()).hexdigest() + "\n")
            os.rename(p + ".sha.tmp", p + ".sha")
        return
    req, d = load(path)
    if mode == "check":
        errs = check(req, d)
        for e in errs:
            print("otlp_check: " + e)
        sys.exit(1 if errs else 0)
    if mode == "stacks":
        tot = {}
        for _, s, n in samples(req, d):
            k = ";".join(frames(d, one(s, "stack_index")))
            tot[k] = tot.get(k, 0) + n
        for k in sorted(tot):
            print("%s %d" % (k, tot[k]))
    elif mode == "samples":
        links = d.get("link_table", [])
        for rattrs, s, n in samples(req, d):
            kv = ["%s=%s" % a for a in rattrs + sample_attrs(d, s)]
            li = one(s, "link_index")
            if li:
                kv.append("link=%s/%s" % (hexb(one(links[li], "trace_id", "")),
                                          hexb(one(links[li], "span_id", ""))))
            print("%s | %s %d" % (",".join(kv), ";".join(frames(d, one(s, "stack_index"))), n))
    elif mode == "resources":
        for rp in req.get("resource_profiles", []):
            res = one(rp, "resource", {})
            print(",".join("%s=%s" % (a["key"][0], anyvalue(one(a, "value", {})))
                           for a in res.get("attributes", [])))
    elif mode == "content":
        sys.stdout.write(content(req, d))
    elif mode == "names":
        strs, attrs = d["string_table"], d.get("attribute_table", [])
        for m in d.get("mapping_table", [])[1:]:
            bid = [anyvalue(one(attrs[i], "value", {})) for i in m.get("attribute_indices", [])
                   if strs[one(attrs[i], "key_strindex")] == "process.executable.build_id.gnu"]
            print("mapping %s %s" % (strs[one(m, "filename_strindex")], bid[0] if bid else "-"))
        funcs = d.get("function_table", [])
        for f in funcs[1:]:
            print("function %s %s" % (strs[one(f, "name_strindex")], strs[one(f, "filename_strindex")] or "-"))
        for loc in d.get("location_table", [])[1:]:
            for l in loc.get("lines", []):
                print("line %s %d" % (strs[one(funcs[one(l, "function_index")], "name_strindex")], one(l, "line")))
    else:
        raise SystemExit(__doc__)


main()
