#!/usr/bin/env python3
"""Print fields of a JSON object read from stdin, space-separated: json_field.py KEY...
(a KEY `a.b` reaches into nested objects; floats with two decimals). For a JSON list of
objects, one line per object."""
import json
import sys


def field(obj, key):
    for part in key.split("."):
        obj = obj[part]
    return f"{obj:.2f}" if isinstance(obj, float) else str(obj)


obj = json.load(sys.stdin)
for o in obj if isinstance(obj, list) else [obj]:
    print(" ".join(field(o, k) for k in sys.argv[1:]))
