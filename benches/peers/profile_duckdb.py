"""DuckDB's profile of a JSON Lines file on one thread: read_json_auto and SUMMARIZE (per
column: type, min, max, approximate distinct count, null percentage, count).

usage: profile_duckdb.py FILE.jsonl
"""

import sys

import duckdb


def main(path):
    con = duckdb.connect()
    con.execute("SET threads = 1")
    rows = con.execute(
        "SUMMARIZE SELECT * FROM read_json_auto(?, format = 'newline_delimited')", [path]
    ).fetchall()
    print(len(rows))


if __name__ == "__main__":
    main(sys.argv[1])
