package wasmpy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// pandasCSV is the workspace file the pandas tests read.
const pandasCSV = `date,city,product,units,price
2024-01-01,Paris,apple,3,1.5
2024-01-01,Lyon,pear,5,2.0
2024-01-02,Paris,pear,2,2.0
2024-01-02,Lyon,apple,7,1.5
2024-01-03,Paris,apple,1,1.5
2024-01-03,Nice,pear,4,2.5
`

// runPandas runs code in the sci interpreter with sales.csv in its
// workspace (it skips, as the numpy tests do, only where no sci build can
// be made).
func runPandas(t *testing.T, code string) *wasmpy.Result {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sales.csv"), []byte(pandasCSV), 0o644))
	return runNumpy(t, wasmpy.Job{Workspace: dir, Code: "import pandas as pd\ndf = pd.read_csv('sales.csv', parse_dates=['date'])\ndf['revenue'] = df.units * df.price\n" + code,
		Limits: wasmpy.Limits{Memory: 256 << 20}})
}

// pandas works in the sandbox: its extension modules (Cython, C and the
// C++ window aggregations), dateutil and pytz with the interpreter's zone
// data, each result checked against what pandas 2.2.3 gives natively.
func TestPandas(t *testing.T) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"read_csv, groupby and agg, describe", `
print(pd.__version__, df.shape, df.dtypes.astype(str).tolist())
g = df.groupby("city").agg(units=("units", "sum"), revenue=("revenue", "sum"), n=("product", "count"))
print(g.to_dict("index"))
print(df.groupby(["city", "product"]).units.sum().to_dict())
print(df.units.describe().round(3).to_dict())
print(df.city.describe().to_dict())
`, "2.2.3 (6, 6) ['datetime64[ns]', 'object', 'object', 'int64', 'float64', 'float64']\n" +
			"{'Lyon': {'units': 12, 'revenue': 20.5, 'n': 2}, 'Nice': {'units': 4, 'revenue': 10.0, 'n': 1}, 'Paris': {'units': 6, 'revenue': 10.0, 'n': 3}}\n" +
			"{('Lyon', 'apple'): 7, ('Lyon', 'pear'): 5, ('Nice', 'pear'): 4, ('Paris', 'apple'): 4, ('Paris', 'pear'): 2}\n" +
			"{'count': 6.0, 'mean': 3.667, 'std': 2.16, 'min': 1.0, '25%': 2.25, '50%': 3.5, '75%': 4.75, 'max': 7.0}\n" +
			"{'count': 6, 'unique': 3, 'top': 'Paris', 'freq': 3}\n"},
		{"merge and pivot_table", `
cities = pd.DataFrame({"city": ["Paris", "Lyon", "Marseille"], "region": ["IDF", "ARA", "PACA"]})
print(df.merge(cities, on="city", how="left").region.fillna("?").tolist())
print(df.merge(cities, on="city").shape, df.merge(cities, on="city", how="outer", indicator=True)["_merge"].astype(str).value_counts().sort_index().to_dict())
p = df.pivot_table(index="city", columns="product", values="units", aggfunc="sum", fill_value=0)
print(p.to_dict(), p.values.sum())
print(pd.concat([df.head(2), df.tail(1)]).index.tolist(), df.sort_values(["units"], ascending=False).units.tolist())
`, "['IDF', 'ARA', 'IDF', 'ARA', 'IDF', '?']\n" +
			"(5, 7) {'both': 5, 'left_only': 1, 'right_only': 1}\n" +
			"{'apple': {'Lyon': 7, 'Nice': 0, 'Paris': 4}, 'pear': {'Lyon': 5, 'Nice': 4, 'Paris': 2}} 22\n" +
			"[0, 1, 5] [7, 5, 4, 3, 2, 1]\n"},
		{"datetime index, resample, rolling", `
s = df.set_index("date").units
print(s.resample("D").sum().to_dict())
print(s.resample("2D").mean().round(3).tolist(), s.index.dayofweek.tolist()[:2], s.index.month_name().tolist()[0])
r = pd.Series([1.0, 5.0, 2.0, 8.0, 3.0], index=pd.date_range("2024-01-01", periods=5, freq="D"))
print(r.rolling(3).mean().round(3).tolist()[2:], r.rolling(3).median().tolist()[2:], r.rolling("2D").sum().tolist(), r.expanding().max().tolist())
print(r.ewm(alpha=0.5).mean().round(4).tolist(), r.shift(1, freq="W").index[0].date(), (r.index + pd.offsets.MonthEnd()).unique().tolist()[0].date())
print(pd.to_datetime(["2024-02-29 00:00", "2024-12-31 23:59"]).strftime("%j %H:%M").tolist(), pd.Timedelta("1D 2h") * 3, pd.Period("2024Q1").end_time.date())
`, "{Timestamp('2024-01-01 00:00:00'): 8, Timestamp('2024-01-02 00:00:00'): 9, Timestamp('2024-01-03 00:00:00'): 5}\n" +
			"[4.25, 2.5] [0, 0] January\n" +
			"[2.667, 5.0, 4.333] [2.0, 5.0, 3.0] [1.0, 6.0, 7.0, 10.0, 11.0] [1.0, 5.0, 5.0, 8.0, 8.0]\n" +
			"[1.0, 3.6667, 2.7143, 5.5333, 4.2258] 2024-01-07 2024-01-31\n" +
			"['060 00:00', '366 23:59'] 3 days 06:00:00 2024-03-31\n"},
		{"time zones: zoneinfo, pytz, dateutil", `
import pytz, dateutil.tz
i = pd.date_range("2024-03-30 23:00", periods=4, freq="h", tz="Europe/Paris")
print([str(x) for x in i])
print(i.tz_convert("UTC").strftime("%H").tolist(), pd.Timestamp("2024-07-01 12:00", tz="America/New_York").utcoffset())
p = pd.Timestamp("2024-01-15 09:30").tz_localize(pytz.timezone("Asia/Tokyo"))
print(p.tz_convert(pytz.utc), "Europe/Paris" in pytz.common_timezones, len(pytz.all_timezones) > 500, pytz.OLSON_VERSION[:2])
d = pd.Timestamp("2024-10-27 01:30", tz="dateutil/Europe/Paris")
print(d + pd.Timedelta(hours=2), dateutil.tz.gettz("Europe/Paris") is not None)
print(pd.Series(pd.to_datetime(["2024-06-01 12:00"])).dt.tz_localize("UTC").dt.tz_convert("Australia/Sydney").dt.hour.tolist())
`, "['2024-03-30 23:00:00+01:00', '2024-03-31 00:00:00+01:00', '2024-03-31 01:00:00+01:00', '2024-03-31 03:00:00+02:00']\n" +
			"['22', '23', '00', '01'] -1 day, 20:00:00\n" +
			"2024-01-15 00:30:00+00:00 True True 20\n" +
			"2024-10-27 02:30:00+01:00 True\n" +
			"[22]\n"},
		{"string methods", `
s = df.city + "-" + df["product"]
print(s.str.upper().tolist()[:2], s.str.contains("^P", regex=True).sum(), s.str.len().max())
print(s.str.split("-", expand=True)[1].value_counts().sort_index().to_dict(), s.str.extract(r"(\w)(\w+)-")[0].tolist())
print(s.str.replace("a", "A", regex=False).tolist()[:2], s.str.startswith("L").tolist()[:2], s.str.cat(sep="|")[:21])
print(df.city.astype("category").cat.codes.tolist(), pd.Series(["a1", None, "b22"]).str.extract(r"(\d+)")[0].fillna("-").tolist())
`, "['PARIS-APPLE', 'LYON-PEAR'] 3 11\n" +
			"{'apple': 3, 'pear': 3} ['P', 'L', 'P', 'L', 'P', 'N']\n" +
			"['PAris-Apple', 'Lyon-peAr'] [False, True] Paris-apple|Lyon-pear\n" +
			"[2, 0, 2, 0, 2, 1] ['1', '-', '22']\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runPandas(t, tc.code)
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, tc.stdout, res.Stdout)
		})
	}
}

// What a run writes with to_csv and to_json comes back in its overlay,
// byte for byte what pandas writes natively.
func TestPandasWritesWorkspace(t *testing.T) {
	res := runPandas(t, `
out = df.groupby("city", as_index=False).agg(units=("units", "sum"), revenue=("revenue", "sum"))
out.to_csv("by_city.csv", index=False)
out.to_json("by_city.json", orient="records")
df.head(2).to_json("head.json", orient="split", date_format="iso")
print(open("by_city.csv").read(), end="")
print(pd.read_json("by_city.json").equals(out), pd.read_csv("by_city.csv").equals(out))
`)
	require.Nil(t, res.Error, res.Stderr)
	csv := "city,units,revenue\nLyon,12,20.5\nNice,4,10.0\nParis,6,10.0\n"
	require.Equal(t, csv+"True True\n", res.Stdout)
	want := map[string]string{
		"by_city.csv":  csv,
		"by_city.json": `[{"city":"Lyon","units":12,"revenue":20.5},{"city":"Nice","units":4,"revenue":10.0},{"city":"Paris","units":6,"revenue":10.0}]`,
		"head.json":    `{"columns":["date","city","product","units","price","revenue"],"index":[0,1],"data":[["2024-01-01T00:00:00.000","Paris","apple",3,1.5,4.5],["2024-01-01T00:00:00.000","Lyon","pear",5,2.0,10.0]]}`,
	}
	got := map[string]string{}
	for _, f := range res.Files {
		got[f.Path] = f.SHA256
	}
	for name, content := range want {
		sum := sha256.Sum256([]byte(content))
		require.Equal(t, hex.EncodeToString(sum[:]), got[name], name)
	}
	require.Len(t, got, len(want))
}

// pandas is imported before the snapshot: a run finds it in sys.modules and
// pays no fuel for importing it.
func TestPandasPreloaded(t *testing.T) {
	res := runNumpy(t, wasmpy.Job{Code: "import sys\nprint('pandas' in sys.modules, 'pytz' in sys.modules)\nimport pandas as pd\nprint(len(pd.DataFrame({'a': [1, 2]})))",
		Limits: wasmpy.Limits{Fuel: 1 << 40}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "True True\n2\n", res.Stdout)
	// Importing pandas takes more than a billion fuel; a run with it
	// preloaded, a few million.
	require.Less(t, res.FuelUsed, uint64(50_000_000))
}

// A pandas call that needs what WASI lacks (mmap, ctypes; its clipboard's
// subprocesses come after ctypes, and pandas starts no threads of its own)
// raises a Python exception that names it, and the sandbox goes on.
func TestPandasWithoutMmapOrProcesses(t *testing.T) {
	for _, tc := range []struct{ name, code, typ, msg string }{
		{"read_csv memory_map", "pd.read_csv('sales.csv', memory_map=True)", "NotImplementedError", "memory_map=True needs the mmap module"},
		{"to_clipboard, whose helpers are subprocesses and ctypes", "df.to_clipboard()", "ModuleNotFoundError", "ctypes"},
		{"clipboard through ctypes", "pd.read_clipboard()", "ModuleNotFoundError", "ctypes"},
		{"interchange buffer through ctypes", `
class Buf:
    bufsize, ptr = 8, 0
    def __dlpack__(self): raise NotImplementedError
    def __dlpack_device__(self): return (1, None)
from pandas.core.interchange.from_dataframe import buffer_to_ndarray
from pandas.core.interchange.dataframe_protocol import DtypeKind
buffer_to_ndarray(Buf(), (DtypeKind.INT, 64, "l", "="), offset=0, length=1)`, "ImportError", "needs ctypes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runPandas(t, tc.code)
			require.NotNil(t, res.Error, res.Stdout)
			require.Equal(t, wasmpy.KindException, res.Error.Kind, res.Stderr)
			require.Equal(t, tc.typ, res.Error.Type, res.Stderr)
			require.Contains(t, res.Error.Message, tc.msg)
		})
	}
	res := runPandas(t, "print(df.units.sum())")
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "22\n", res.Stdout)
}

// BenchmarkPandas runs testdata/bench/pandas_ops.py (each operation's best
// time: read_csv of 100k rows, groupby, merge, sort, to_csv) in the sci
// sandbox and with a native pandas in the same run, and reports each
// operation's milliseconds and the sandbox/native ratio.
func BenchmarkPandas(b *testing.B) { benchSciOps(b, "testdata/bench/pandas_ops.py", "pandas") }
