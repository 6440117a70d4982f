"""pyiceberg as a differential peer for Covenant's Iceberg format.

For generated schema changes on a table that pyiceberg created (in-memory SQLite catalog):

1. pyiceberg's UpdateSchema, given the change column by column (delete, rename, update type,
   requiredness and doc, add, move, identifier fields) without allow_incompatible_changes,
   accepts it exactly when `covenant plan --format iceberg` prints DDL for it (and refuses it
   exactly when Covenant refuses), except for the documented disagreements below;
2. when Covenant prints DDL, applying its operations (the structured form of each statement,
   one commit each, in Covenant's order) with pyiceberg gives a schema equal to the new one:
   the same columns in the same order with the same names, types, requiredness and docs, the
   same ids for every column that existed before (added columns get the ids pyiceberg assigns),
   and the same identifier fields.

Known disagreements, where Covenant follows the Java implementation and the specification:
- pyiceberg accepts a decimal scale change (its promotion check compares a scale with itself);
- pyiceberg accepts string -> binary and binary -> string (its promote allows them; Java's
  TypeUtil.isPromotionAllowed and the specification do not).
"""

import json
import os
import random
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

pyiceberg = pytest.importorskip("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import NestedField  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("COVENANT_BIN", str(ROOT / "target" / "debug" / "covenant"))
CASES = 200

BASE = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "instrument_sk", "required": True, "type": "long"},
        {"id": 2, "name": "exchange", "required": True, "type": "string"},
        {"id": 3, "name": "tick_size", "required": False, "type": "decimal(9, 2)"},
        {"id": 4, "name": "max_leverage", "required": False, "type": "int"},
        {"id": 5, "name": "ratio", "required": False, "type": "float"},
        {"id": 6, "name": "listed_on", "required": False, "type": "date"},
        {"id": 7, "name": "vendor_data", "required": False, "type": "string"},
        {"id": 8, "name": "payload", "required": False, "type": "binary"},
        {"id": 9, "name": "status", "required": True, "type": "string", "doc": "listing status"},
        {
            "id": 10,
            "name": "location",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 11, "name": "lat", "required": False, "type": "double"},
                    {"id": 12, "name": "lon", "required": False, "type": "double"},
                ],
            },
        },
    ],
}

RETYPES = [
    "long", "int", "double", "float", "decimal(18, 2)", "decimal(9, 3)", "decimal(5, 2)",
    "string", "binary", "timestamp", "boolean",
]


def pair_of(rng):
    """(old, new, names of the steps) for one random change of BASE."""
    new = json.loads(json.dumps(BASE))
    steps = []
    next_id = [13]

    def structs():
        out = [new["fields"]]
        out += [f["type"]["fields"] for f in new["fields"] if isinstance(f["type"], dict)]
        return out

    for _ in range(rng.randint(1, 3)):
        fields = rng.choice(structs())
        step = rng.choice(["add", "add_required", "drop", "rename", "retype", "optional",
                           "require", "doc", "move", "identifier"])
        plain = [f for f in fields if isinstance(f["type"], str)]
        if step == "add":
            fields.append({"id": next_id[0], "name": f"added_{next_id[0]}", "required": False,
                           "type": rng.choice(["string", "long", "boolean", "decimal(10, 2)"]),
                           "doc": rng.choice([None, "an added column"])})
            if fields[-1]["doc"] is None:
                del fields[-1]["doc"]
            next_id[0] += 1
        elif step == "add_required":
            fields.append({"id": next_id[0], "name": f"req_{next_id[0]}", "required": True,
                           "type": "string"})
            next_id[0] += 1
        elif step == "drop" and len(fields) > 1:
            victim = rng.choice([f for f in fields if f["id"] not in new["identifier-field-ids"]])
            fields.remove(victim)
        elif step == "rename" and fields:
            f = rng.choice(fields)
            f["name"] = f["name"] + "_v2"
        elif step == "retype" and plain:
            f = rng.choice(plain)
            f["type"] = rng.choice(RETYPES)
            if f["id"] in new["identifier-field-ids"] and f["type"] in ("float", "double"):
                f["type"] = "long"
        elif step == "optional" and fields:
            f = rng.choice(fields)
            if f["id"] not in new["identifier-field-ids"]:
                f["required"] = False
        elif step == "require" and fields:
            rng.choice(fields)["required"] = True
        elif step == "doc" and fields:
            rng.choice(fields)["doc"] = "changed doc"
        elif step == "move" and len(fields) > 1:
            f = fields.pop(rng.randrange(len(fields)))
            fields.insert(rng.randrange(len(fields) + 1), f)
        elif step == "identifier":
            ids = new["identifier-field-ids"]
            top = {f["id"]: f for f in new["fields"]}
            if 2 in top and top[2]["required"] and 2 not in ids:
                ids.append(2)
        else:
            continue
        steps.append(step)
    new["schema-id"] = 1
    return BASE, new, steps


def index(schema):
    """id -> (path of names, field) for struct fields, top level and nested."""
    out = {}

    def walk(fields, prefix):
        for f in fields:
            out[f["id"]] = (prefix + (f["name"],), f)
            if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
                walk(f["type"]["fields"], prefix + (f["name"],))

    walk(schema["fields"], ())
    return out


def iceberg_type(type_json):
    return NestedField.model_validate(
        {"id": 0, "name": "t", "required": False, "type": type_json}
    ).field_type


def catalog(tmp):
    return SqlCatalog("covenant", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")


def new_table(cat):
    name = f"ns.t_{uuid.uuid4().hex[:10]}"
    return cat.create_table(name, schema=Schema.model_validate_json(json.dumps(BASE)))


def same_type(a, b):
    return iceberg_type(a) == iceberg_type(b)


def apply_naively(table, old, new):
    """The change column by column, as a user of UpdateSchema would write it: paths by the old
    names (UpdateSchema resolves them against the schema it started from)."""
    was, now = index(old), index(new)
    with table.update_schema() as u:
        for fid, (path, f) in was.items():
            if fid not in now and (len(path) == 1 or [i for i, (p, _) in was.items() if p == path[:-1]][0] in now):
                u.delete_column(path)
        for fid, (path, f) in now.items():
            if fid not in was:
                continue
            old_path, o = was[fid]
            primitive = isinstance(o["type"], str) and isinstance(f["type"], str)
            if primitive and not same_type(o["type"], f["type"]):
                u.update_column(old_path, field_type=iceberg_type(f["type"]))
            if o["required"] != f["required"]:
                u.update_column(old_path, required=f["required"])
            if f.get("doc") and f.get("doc") != o.get("doc"):
                u.update_column(old_path, doc=f["doc"])
            if o["name"] != f["name"]:
                u.rename_column(old_path, f["name"])
        for fid, (path, f) in now.items():
            if fid in was:
                continue
            parent = path[:-1]
            if parent:
                parent_id = [i for i, (p, _) in now.items() if p == parent][0]
                if parent_id not in was:
                    continue
                parent = was[parent_id][0]
            u.add_column(parent + (f["name"],), iceberg_type(f["type"]), doc=f.get("doc"),
                         required=f["required"])
        if set(old.get("identifier-field-ids", [])) != set(new.get("identifier-field-ids", [])):
            u.set_identifier_fields(*[".".join(now[i][0]) for i in new["identifier-field-ids"]])


def apply_covenant(table, statements):
    """Covenant's operations, one commit each: their paths are valid when each runs."""
    for s in statements:
        path = tuple(s.get("path", ()))
        with table.update_schema() as u:
            op = s["op"]
            if op == "delete_column":
                u.delete_column(path)
            elif op == "rename_column":
                u.rename_column(path, s["to"])
            elif op == "update_type":
                u.update_column(path, field_type=iceberg_type(s["type"]))
            elif op == "make_optional":
                u.make_column_optional(path)
            elif op == "update_doc":
                u.update_column(path, doc=s["doc"])
            elif op == "add_column":
                u.add_column(path, iceberg_type(s["type"]), doc=s.get("doc"))
            elif op == "move_first":
                u.move_first(path)
            elif op == "move_after":
                u.move_after(path, path[:-1] + (s["after"],))
            elif op == "set_identifier_fields":
                u.set_identifier_fields(*s["fields"])
            else:
                raise AssertionError(f"unknown op {op}")


def comparable(schema_json, old_ids):
    """Columns in order with name, type, requiredness, doc and (for old columns) id."""
    def walk(fields):
        out = []
        for f in fields:
            t = f["type"]
            nested = isinstance(t, dict) and t.get("type") == "struct"
            out.append({
                "name": f["name"],
                "id": f["id"] if f["id"] in old_ids else "new",
                "required": f["required"],
                "doc": f.get("doc"),
                "type": walk(t["fields"]) if nested else str(iceberg_type(t)),
            })
        return out

    ids = index(schema_json)
    names = sorted(".".join(ids[i][0]) for i in schema_json.get("identifier-field-ids", []))
    return {"fields": walk(schema_json["fields"]), "identifiers": names}


def known_disagreement(old, new):
    """Why pyiceberg accepts a change Covenant refuses, when it is one of the documented ones."""
    was, now = index(old), index(new)
    for fid, (_, f) in now.items():
        if fid in was and isinstance(f["type"], str):
            a, b = was[fid][1]["type"], f["type"]
            if not isinstance(a, str):
                continue
            if a.startswith("decimal") and b.startswith("decimal"):
                pa, sa = [int(x) for x in a[8:-1].split(",")]
                pb, sb = [int(x) for x in b[8:-1].split(",")]
                if sa != sb and pb >= pa:
                    return "pyiceberg accepts a decimal scale change"
            if {a, b} == {"string", "binary"}:
                return "pyiceberg promotes between string and binary"
    return None


def covenant_plan(tmp, old, new):
    old_file, new_file = Path(tmp, "old.json"), Path(tmp, "new.json")
    old_file.write_text(json.dumps(old))
    new_file.write_text(json.dumps(new))
    out = subprocess.run(
        [BIN, "plan", "--format", "iceberg", "--output", "json", str(new_file), str(old_file)],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["ddl"]


def test_pyiceberg_accepts_exactly_what_covenant_plans_and_ends_at_the_new_schema():
    rng = random.Random(20260123)
    agreed, applied, exceptions = 0, 0, {}
    with tempfile.TemporaryDirectory() as tmp:
        cat = catalog(tmp)
        cat.create_namespace("ns")
        created = json.loads(new_table(cat).schema().model_dump_json(by_alias=True))
        assert index(created).keys() == index(BASE).keys(), "pyiceberg kept the ids"
        for n in range(CASES):
            old, new, steps = pair_of(rng)
            ddl = covenant_plan(tmp, old, new)
            covenant_applies = "refused" not in ddl
            try:
                apply_naively(new_table(cat), old, new)
                pyiceberg_applies = True
            except Exception as e:  # pyiceberg raises ValueError or ValidationError
                pyiceberg_applies, why = False, e
            if covenant_applies == pyiceberg_applies:
                agreed += 1
            else:
                reason = known_disagreement(old, new)
                assert reason and pyiceberg_applies and not covenant_applies, (
                    f"case {n} {steps}: covenant applies={covenant_applies}, "
                    f"pyiceberg applies={pyiceberg_applies} "
                    f"({'' if pyiceberg_applies else why})\nddl: {json.dumps(ddl)}\n"
                    f"new: {json.dumps(new)}"
                )
                exceptions[reason] = exceptions.get(reason, 0) + 1
                continue
            if covenant_applies:
                table = new_table(cat)
                apply_covenant(table, ddl["statements"])
                got = json.loads(table.schema().model_dump_json(by_alias=True))
                old_ids = set(index(old))
                assert comparable(got, old_ids) == comparable(new, old_ids), (
                    f"case {n} {steps}\nddl: {json.dumps(ddl['statements'])}"
                )
                applied += 1
    print(f"pyiceberg differential: {CASES} cases, {agreed} agreed ({applied} applied through "
          f"Covenant's DDL), documented disagreements: {exceptions}")
    assert applied >= 20 and agreed >= CASES // 2


@pytest.mark.parametrize("old_type,new_type", [
    ("decimal(9, 2)", "decimal(9, 3)"),
    ("decimal(9, 2)", "decimal(12, 1)"),
    ("string", "binary"),
    ("binary", "string"),
])
def test_documented_disagreements_still_hold(old_type, new_type):
    """Each listed disagreement is real: pyiceberg applies the change, Covenant refuses it. When
    pyiceberg changes its mind, this fails and the list above must shrink."""
    old = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "c", "required": False, "type": old_type}]}
    new = json.loads(json.dumps(old))
    new["fields"][0]["type"] = new_type
    assert known_disagreement(old, new)
    with tempfile.TemporaryDirectory() as tmp:
        assert "refused" in covenant_plan(tmp, old, new)
        cat = catalog(tmp)
        cat.create_namespace("ns")
        table = cat.create_table("ns.t", schema=Schema.model_validate_json(json.dumps(old)))
        apply_naively(table, old, new)
        got = json.loads(cat.load_table("ns.t").schema().model_dump_json(by_alias=True))
        assert str(iceberg_type(got["fields"][0]["type"])) == str(iceberg_type(new_type))
