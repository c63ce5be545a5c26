#!/usr/bin/env python3
"""Print fields of one JSON object read from stdin, space-separated: json_field.py KEY...
(a KEY `a.b` reaches into nested objects; floats with two decimals)."""
import json
import sys


def field(obj, key):
    for part in key.split("."):
        obj = obj[part]
    return f"{obj:.2f}" if isinstance(obj, float) else str(obj)


obj = json.load(sys.stdin)
print(" ".join(field(obj, k) for k in sys.argv[1:]))
