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
