package console

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"agent-7":                     "agent-7",
		"Zoë O'Brien <z@example.com>": "Zoë O'Brien <z@example.com>",
		"evil\x1b]0;PWNED\x07\x1b[2J": `evil\x1b]0;PWNED\x07\x1b[2J`,
		"agent\nFAKE LINE":            `agent\nFAKE LINE`,
		"a\tb\rc\x00":                 `a\tb\rc\x00`,
		"csi\u009b2J":                 `csi\u009b2J`,
		"abc\u202edcba":               `abc\u202edcba`,
		"tag\U000e0041":               `tag\U000e0041`,
		"bad\xffutf8":                 `bad\xffutf8`,
		"del\x7f":                     `del\x7f`,
		"line\u2028sep":               `line\u2028sep`,
	} {
		require.Equal(t, want, Clean(in), "%q", in)
	}
	require.Equal(t, "one\n\ttwo\\x1b[2J\n", CleanText("one\n\ttwo\x1b[2J\n"))
}

// JSON the CLI prints carries no character a terminal would obey, and
// decodes to the same value.
func TestWriteIndentedEscapes(t *testing.T) {
	v := map[string]string{"a": "evil\x1b]0;PWNED\x07", "b": "csi\u009b2J", "c": "rtl\u202e", "d": "tag\U000e0041", "e": "Zoë"}
	var buf bytes.Buffer
	require.NoError(t, WriteIndented(&buf, v))
	out := buf.String()
	require.True(t, plain(out, true), "%q", out)
	require.Contains(t, out, `\u009b`)
	require.Contains(t, out, `\udb40\udc41`)
	require.Contains(t, out, "Zoë")
	var back map[string]string
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, v, back)
}
