package units

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"64MiB": 64 << 20, "1GiB": 1 << 30, "512K": 512 << 10, "1000B": 1000,
		"0": 0, "2MB": 2e6, "3 KiB": 3 << 10, "1048576": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5GiB", "1TiB", "99999999999999999999", "9999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}

func TestParseSizeWithUnit(t *testing.T) {
	for _, in := range []string{"64", "1000"} {
		if _, err := ParseSizeWithUnit(in); err == nil || err.Error() != "size without a unit" {
			t.Errorf("ParseSizeWithUnit(%q): %v", in, err)
		}
	}
	if n, err := ParseSizeWithUnit("0"); err != nil || n != 0 {
		t.Errorf("ParseSizeWithUnit(0) = %d, %v", n, err)
	}
	if n, err := ParseSizeWithUnit("2MB"); err != nil || n != 2e6 {
		t.Errorf("ParseSizeWithUnit(2MB) = %d, %v", n, err)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 1500: "1500B", 1 << 10: "1KiB", 64 << 20: "64MiB", 3 << 30: "3GiB", 1<<30 + 1: "1073741825B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(want); err != nil || back != n {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", want, back, err, n)
		}
	}
}
