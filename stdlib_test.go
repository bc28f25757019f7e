package wasmpy_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/ncruces/go-sqlite3/driver" // the host's SQLite, to read the guest's database
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The standard library is laid out as a native install's: sources beside
// their bytecode in a real (read-only) directory, sys._stdlib_dir.
func TestStdlibLayout(t *testing.T) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"stdlib dir", `
import os, sys, json, importlib.util
print(sys._stdlib_dir, os.path.isdir(sys._stdlib_dir))
print(os.path.dirname(os.__file__) == sys._stdlib_dir, os.path.exists(os.__file__))
print(json.__file__, os.path.exists(json.__cached__))
print(importlib.util.find_spec("json.decoder").origin)
`, "/usr/local/lib/python3.13 True\nTrue True\n/usr/local/lib/python3.13/json/__init__.py True\n" +
			"/usr/local/lib/python3.13/json/decoder.py\n"},
		{"packages once left out", `
import venv, __phello__, __hello__, importlib.resources as r
print(venv.EnvBuilder.__name__, __phello__.initialized, __hello__.initialized)
print(r.files("venv").joinpath("scripts/common/activate").read_text().startswith("# This file must be used"))
`, "EnvBuilder True True\nTrue\n"},
		{"importlib.resources.files() with no argument", `
import importlib.resources as r
g = {"__name__": "email"}  # code running in the email package
exec("import importlib.resources as r\nhere = r.files()", g)
print(g["here"] == r.files("email"), g["here"].name, g["here"].joinpath("architecture.rst").is_file())
`, "True email True\n"},
		{"source lines", `
import inspect, json, linecache, traceback
try:
    json.loads("{")
except ValueError as e:
    text = "".join(traceback.format_exception(e))
print("return _default_decoder.decode(s)" in text, 'File "/usr/local/lib/python3.13/json/decoder.py"' in text)
print(inspect.getsource(json.dumps).startswith("def dumps("))
print(linecache.getline(json.__file__, 1).startswith('r"""JSON'))
`, "True True\nTrue\nTrue\n"},
		{"errors of paths through a file", `
import errno, os
for op in (os.stat, os.listdir, os.unlink, os.rmdir, lambda p: open(p), lambda p: os.mkdir(p)):
    try:
        op(os.__file__ + "/x")
    except OSError as e:
        print(errno.errorcode[e.errno], end=" ")
try:
    os.stat(os.path.join(os.path.dirname(os.__file__), "nowhere", "x"))
except OSError as e:
    print(errno.errorcode[e.errno])
`, "ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOENT\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Code: tc.code})
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, tc.stdout, res.Stdout)
		})
	}
}

// The modules that need a C library of their own (sqlite3, bz2, lzma) and
// zoneinfo's data, through the real interpreter.
func TestStdlibLibraries(t *testing.T) {
	t.Run("bz2 and lzma", func(t *testing.T) {
		runChecks(t, nil, wasmpy.Job{Code: `
import base64, bz2, lzma, os
data = b"wasmpy " * 20000 + bytes(range(256))
for mod in (bz2, lzma):
    packed = mod.compress(data)
    assert len(packed) < len(data) // 100, (mod.__name__, len(packed))
    assert mod.decompress(packed) == data, mod.__name__
for fmt in (lzma.FORMAT_XZ, lzma.FORMAT_ALONE, lzma.FORMAT_RAW):
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 6}] if fmt == lzma.FORMAT_RAW else None
    packed = lzma.compress(data, format=fmt, filters=filters)
    assert lzma.decompress(packed, format=fmt, filters=filters) == data, fmt
assert lzma.is_check_supported(lzma.CHECK_SHA256)
# Streams native CPython wrote read back the same.
native = b"wasmpy reads what native CPython wrote\n" * 3
assert bz2.decompress(base64.b64decode(
    "QlpoOTFBWSZTWSweYnYAADNXgAAQQAAIAEAAJmPdoCAAUKZMTIMjCv9VRo9JoDNSKPksPELIS7bul0pQrRyy6XQyqsw5os9assLUSl+LuSKcKEgWDzE7AA==")) == native
assert lzma.decompress(base64.b64decode(
    "/Td6WFoAAATm1rRGAgAhARYAAAB0L+Wj4AB0AC5dADuYSs2Oy4B0osvu8WLyGBxAJBEn/TMEWzHsgGDtREQ1kGw0MTsiLNoeJrlAAAAAAAASV8ITldf35AABSnUXl38KH7bzfQEAAAAABFla")) == native
# Files in the workspace, written and read by the modules' own file objects.
with bz2.open("d.bz2", "wt") as f:
    f.write("line\n" * 1000)
with lzma.open("d.xz", "wb") as f:
    f.write(data)
assert bz2.open("d.bz2", "rt").read() == "line\n" * 1000
assert lzma.open("d.xz").read() == data
try:
    lzma.decompress(b"not xz at all")
    raise AssertionError("garbage decompressed")
except lzma.LZMAError:
    pass
try:
    bz2.decompress(b"BZh9 garbage")
    raise AssertionError("garbage decompressed")
except OSError:
    pass
print("ok")
`})
	})

	t.Run("sqlite3 in memory", func(t *testing.T) {
		runChecks(t, nil, wasmpy.Job{Code: `
import sqlite3
assert sqlite3.sqlite_version_info >= (3, 46), sqlite3.sqlite_version
con = sqlite3.connect(":memory:")
con.execute("create table t (id integer primary key, name text, score real)")
con.executemany("insert into t (name, score) values (?, ?)", [(f"n{i}", i / 4) for i in range(1000)])
assert con.execute("select count(*), sum(id), max(score) from t").fetchone() == (1000, 500500, 249.75)
assert con.execute("select name from t where id = ?", (42,)).fetchone() == ("n41",)
con.row_factory = sqlite3.Row
row = con.execute("select * from t order by score desc limit 1").fetchone()
assert (row["id"], row["name"]) == (1000, "n999"), tuple(row)
con.row_factory = None
# JSON, math functions, FTS5, window functions, a Python function.
assert con.execute("select json_extract('{\"a\": [1, 2, 3]}', '$.a[2]')").fetchone() == (3,)
assert con.execute("select round(sqrt(2), 3), pow(2, 10)").fetchone() == (1.414, 1024.0)
con.execute("create virtual table docs using fts5(body)")
con.executemany("insert into docs values (?)", [("the quick brown fox",), ("lazy dogs sleep",), ("a quick test",)])
assert sorted(r[0] for r in con.execute("select body from docs where docs match 'quick'")) == ["a quick test", "the quick brown fox"]
assert [r[0] for r in con.execute("select sum(id) over (order by id rows 1 preceding) from t limit 3")] == [1, 3, 5]
con.create_function("rev", 1, lambda s: s[::-1])
assert con.execute("select rev('wasmpy')").fetchone() == ("ypmsaw",)
try:
    con.execute("insert into t (id) values (1)")
    raise AssertionError("duplicate key accepted")
except sqlite3.IntegrityError:
    pass
with con:
    con.execute("delete from t where id > 10")
assert con.execute("select count(*) from t").fetchone() == (10,)
blob = con.serialize()
assert blob[:16] == b"SQLite format 3\x00"
print("ok")
`})
	})

	t.Run("sqlite3 on a workspace file", func(t *testing.T) {
		res := runChecks(t, nil, wasmpy.Job{Code: `
import os, sqlite3
con = sqlite3.connect("app.db")
con.execute("create table notes (id integer primary key, body text)")
with con:
    con.executemany("insert into notes (body) values (?)", [("first",), ("second",)])
con.close()
con = sqlite3.connect("app.db")
with con:
    con.execute("insert into notes (body) values ('third')")
    con.execute("update notes set body = upper(body) where id = 1")
try:
    with con:
        con.execute("insert into notes (body) values ('rolled back')")
        raise KeyError("abort")
except KeyError:
    pass
assert con.execute("select body from notes order by id").fetchall() == [("FIRST",), ("second",), ("third",)]
con.close()
assert open("app.db", "rb").read(16) == b"SQLite format 3\x00"
assert sorted(os.listdir(".")) == ["app.db"], os.listdir(".")
print("ok")
`})
		db, ok := res.File("app.db")
		require.True(t, ok, "the database is a workspace file")
		// The host's own SQLite reads what the guest's wrote.
		path := filepath.Join(t.TempDir(), "app.db")
		require.NoError(t, os.WriteFile(path, db, 0o600))
		conn, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
		require.NoError(t, err)
		defer conn.Close()
		var bodies []string
		rows, err := conn.Query("select body from notes order by id")
		require.NoError(t, err)
		for rows.Next() {
			var b string
			require.NoError(t, rows.Scan(&b))
			bodies = append(bodies, b)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []string{"FIRST", "second", "third"}, bodies)
	})

	t.Run("zoneinfo", func(t *testing.T) {
		runChecks(t, nil, wasmpy.Job{Code: `
import zoneinfo, tzdata
from datetime import datetime, timedelta, timezone
paris = zoneinfo.ZoneInfo("Europe/Paris")
assert datetime(2024, 1, 15, 12, tzinfo=paris).utcoffset() == timedelta(hours=1)
assert datetime(2024, 7, 15, 12, tzinfo=paris).utcoffset() == timedelta(hours=2)
assert datetime(2024, 7, 15, 12, tzinfo=paris).tzname() == "CEST"
# Summer time began at 01:00 UTC on 31 March 2024 and ended at 01:00 UTC on 27 October.
utc = timezone.utc
assert datetime(2024, 3, 31, 0, 59, tzinfo=utc).astimezone(paris).utcoffset() == timedelta(hours=1)
assert datetime(2024, 3, 31, 1, 0, tzinfo=utc).astimezone(paris).utcoffset() == timedelta(hours=2)
assert datetime(2024, 10, 27, 0, 59, tzinfo=utc).astimezone(paris).utcoffset() == timedelta(hours=2)
assert datetime(2024, 10, 27, 1, 0, tzinfo=utc).astimezone(paris).utcoffset() == timedelta(hours=1)
# The repeated hour: fold picks the second 02:30.
assert datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=paris).utcoffset() == timedelta(hours=1)
ny = zoneinfo.ZoneInfo("America/New_York")
assert datetime(2024, 7, 4, 12, tzinfo=ny).utcoffset() == timedelta(hours=-4)
assert zoneinfo.ZoneInfo("US/Eastern").utcoffset(datetime(2024, 1, 1)) == timedelta(hours=-5)
assert zoneinfo.ZoneInfo("Asia/Kolkata").utcoffset(datetime(2024, 1, 1)) == timedelta(hours=5, minutes=30)
zones = zoneinfo.available_timezones()
assert {"Europe/Paris", "UTC", "Australia/Sydney", "US/Pacific"} <= zones and len(zones) > 500, len(zones)
assert len(tzdata.IANA_VERSION) == 5, tzdata.IANA_VERSION
try:
    zoneinfo.ZoneInfo("Mars/Olympus_Mons")
    raise AssertionError("unknown zone")
except zoneinfo.ZoneInfoNotFoundError:
    pass
print("ok")
`})
	})
}
