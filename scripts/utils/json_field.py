#!/usr/bin/env python3
"""Print one field of a JSON object read from a file or stdin: json_field.py KEY [FILE]."""
import json
import sys

obj = json.load(open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin)
for part in sys.argv[1].split("."):
    obj = obj[part]
print(f"{obj:.2f}" if isinstance(obj, float) else obj)
