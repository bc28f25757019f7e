package codegen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, reply, want string
	}{
		{"python fence", "Here:\n```python\nprint(1)\n```\nDone.", "print(1)\n"},
		{"py tag", "```py\nx = 1\n```", "x = 1\n"},
		{"python3 tag and attributes", "```python3 title=\"a.py\"\nx = 1\n```", "x = 1\n"},
		{"brace tag", "```{.python}\nx = 1\n```", "x = 1\n"},
		{"untagged fence", "```\nprint(2)\n```", "print(2)\n"},
		{"tilde fence", "~~~python\nprint(3)\n~~~", "print(3)\n"},
		{"bare reply", "  print(4)\nprint(5)\n\n", "print(4)\nprint(5)\n"},
		{"empty reply", "   \n", ""},
		{"crlf", "```python\r\nprint(1)\r\n```\r\n", "print(1)\n"},
		{"unclosed fence", "```python\nprint(1)\nprint(2)", "print(1)\nprint(2)\n"},
		{"longest python block wins", "```python\nx = 1\n```\ntext\n```python\ndef f():\n    return 2\n```\n```python\ny = 3\n```",
			"def f():\n    return 2\n"},
		{"python beats a longer untagged block", "```\nthis is the sample output, longer than the code\n```\n```python\nx = 1\n```", "x = 1\n"},
		{"python beats other languages", "```bash\npip install nothing at all here\n```\n```python\nx = 1\n```", "x = 1\n"},
		{"only other languages: no code", "```json\n{\"a\": 1}\n```", ""},
		{"empty python block skipped", "```python\n```\n```\nx = 1\n```", "x = 1\n"},
		{"longer closing fence", "````python\n```\nnot a close\n````", "```\nnot a close\n"},
		{"tilde block holds backticks", "~~~python\ns = '```'\n~~~", "s = '```'\n"},
		{"indented fence is dedented", "1. Code:\n   ```python\n   def f():\n       return 1\n   ```", "def f():\n    return 1\n"},
		{"four spaces is not a fence", "    ```python\n    x = 1\n    ```", "```python\n    x = 1\n    ```\n"},
		{"two backticks is not a fence", "``python\nx``", "``python\nx``\n"},
		{"ties: the first", "```python\na = 1\n```\n```python\nb = 2\n```", "a = 1\n"},
		{"trailing blank lines trimmed", "```python\nx = 1\n\n\n```", "x = 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Extract(tc.reply))
		})
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{"```python\nx\n```", "~~~\n~~~", "````\n```\n", "  ```py\n  a\n", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got := Extract(reply)
		if got != "" && !strings.HasSuffix(got, "\n") {
			t.Fatalf("code %q does not end in a newline", got)
		}
		if len(got) > len(reply)+1 {
			t.Fatalf("code longer than the reply: %q from %q", got, reply)
		}
	})
}

func TestExtractWithTests(t *testing.T) {
	fn := "def f():\n    return 1\n"
	tests := "import unittest\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(f(), 1)\n"
	for name, tt := range map[string]struct{ reply, code, tests string }{
		"two blocks":       {"```python\n" + fn + "```\n```python\n" + tests + "```", fn, tests},
		"tests first":      {"```py\n" + tests + "```\ntext\n```python\n" + fn + "```", fn, tests},
		"one block":        {"```python\n" + fn + "```", fn, ""},
		"only tests":       {"```python\n" + tests + "```", tests, ""},
		"no fence":         {fn, fn, ""},
		"another language": {"```python\n" + fn + "```\n```text\nclass X(TestCase)\n```", fn, ""},
	} {
		code, gotTests := ExtractWithTests(tt.reply)
		require.Equal(t, tt.code, code, name)
		require.Equal(t, tt.tests, gotTests, name)
	}
}
