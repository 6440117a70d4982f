"""The seed's approach to field prevalence (adr-005, scripts/monitor_vendor_data_fields.py):
json.loads every record and count keys with a Counter, the record's own and those of its
vendor_data column. Prints the prevalence of each key as JSON.

usage: profile_counter.py FILE.jsonl
"""

import json
import sys
from collections import Counter


def main(path):
    fields = Counter()
    vendor = Counter()
    total = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            total += 1
            fields.update(k for k, v in record.items() if v is not None)
            extras = record.get("vendor_data")
            if extras:
                vendor.update(json.loads(extras).keys())
    out = {f"/{k}": n / total for k, n in fields.items()}
    out.update({f"/vendor_data/{k}": n / total for k, n in vendor.items()})
    json.dump({"records": total, "prevalence": out}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
