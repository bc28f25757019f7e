package codegen

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each rule, as the generator applies it, through the real validator in the
// real sandbox.
func TestValidateRules(t *testing.T) {
	sb := testSandbox(t)
	rules := Rules{AllowImports: DefaultAllowImports(), ForbiddenNames: DefaultForbiddenNames(), ForbidDunder: true, RequireCall: "submit_result"}
	for _, tc := range []struct {
		name, code string
		rules      *Rules // default: rules
		line       int
		rule, msg  string // empty rule: no findings
	}{
		{"valid", "import math, json\nfrom collections import Counter\nsubmit_result(math.pi)\n", nil, 0, "", ""},
		{"syntax", "x = 1\ndef f(:\n    pass\nsubmit_result(1)\n", nil, 2, "syntax", "invalid syntax"},
		{"syntax: unclosed", "submit_result((1,\n", nil, 1, "syntax", "never closed"},
		{"compiler error", "x = 1\nreturn x\n", nil, 2, "syntax", "'return' outside function"},
		{"null byte", "x = 1\x00\nsubmit_result(x)\n", nil, 1, "syntax", ""},
		{"disallowed import", "import math\nimport os\nsubmit_result(1)\n", nil, 2, "import", "import of 'os' is not allowed"},
		{"disallowed from-import", "from subprocess import run\nsubmit_result(1)\n", nil, 1, "import", "'subprocess'"},
		{"dotted import checks the top", "import os.path\nsubmit_result(1)\n", nil, 1, "import", "'os'"},
		{"relative import", "from . import x\nsubmit_result(1)\n", nil, 1, "import", "relative imports"},
		{"wasmpy is always allowed", "from wasmpy import submit_result\nsubmit_result(1)\n", nil, 0, "", ""},
		{"open", "data = open('/etc/passwd').read()\nsubmit_result(data)\n", nil, 1, "name", "open is not allowed"},
		{"eval", "submit_result(eval('1+1'))\n", nil, 1, "name", "eval is not allowed"},
		{"exec", "exec('x = 1')\nsubmit_result(1)\n", nil, 1, "name", "exec is not allowed"},
		{"compile", "c = compile('1', 'f', 'eval')\nsubmit_result(1)\n", nil, 1, "name", "compile is not allowed"},
		{"__import__", "m = __import__('os')\nsubmit_result(1)\n", nil, 1, "name", "__import__ is not allowed"},
		{"globals", "g = globals()\nsubmit_result(1)\n", nil, 1, "name", "globals is not allowed"},
		{"__subclasses__", "subs = ().__class__.__base__.__subclasses__()\nsubmit_result(1)\n", nil, 1, "dunder", "__subclasses__"},
		{"__globals__ via getattr", "def f(): pass\ng = getattr(f, '__globals__')\nsubmit_result(1)\n", nil, 2, "dunder", "__globals__"},
		{"frame walking", "import sys\ng = sys._getframe().f_globals\n", &Rules{ForbidDunder: true}, 2, "dunder", "f_globals"},
		{"tb_frame", "try:\n    1/0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame\nsubmit_result(1)\n", nil, 4, "dunder", "tb_frame"},
		{"__builtins__", "b = __builtins__\nsubmit_result(1)\n", nil, 1, "dunder", "__builtins__"},
		{"ordinary dunders pass", "class A:\n    def __init__(self):\n        super().__init__()\nif __name__ == '__main__':\n    submit_result(type(A()).__name__)\n", nil, 0, "", ""},
		{"shadowing is not use", "open = 1\nsubmit_result(open + 1)\n", nil, 2, "name", "open"},
		{"missing submit_result", "x = 6 * 7\nprint(x)\n", nil, 2, "result", "never calls submit_result"},
		{"submit_result through the module", "import wasmpy\nwasmpy.submit_result(1)\n", nil, 0, "", ""},
		{"function required", "def g(): pass\n", &Rules{RequireDef: "f"}, 1, "function", "does not define the function f"},
		{"async function refused", "async def f(): pass\n", &Rules{RequireDef: "f"}, 1, "function", "plain def"},
		{"zero rules: syntax only", "import os\nprint(open('x'))\n", &Rules{}, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rules
			if tc.rules != nil {
				r = *tc.rules
			}
			findings, err := Validate(context.Background(), sb, tc.code, r)
			require.NoError(t, err)
			if tc.rule == "" {
				require.Empty(t, findings)
				return
			}
			require.NotEmpty(t, findings)
			f := findings[0]
			require.Equal(t, tc.rule, f.Rule, "%+v", findings)
			require.Equal(t, tc.line, f.Line, "%+v", findings)
			require.Contains(t, f.Message, tc.msg)
		})
	}
}

// A finding is worded for the model: the line, the message, the source line.
func TestDescribeFindings(t *testing.T) {
	code := "import math\nimport os\n"
	got := describeFindings(code, []Finding{{Line: 2, Rule: "import", Message: "import of 'os' is not allowed"}, {Line: 9, Message: "past the end"}})
	require.Equal(t, "- line 2: import of 'os' is not allowed\n    import os\n- line 9: past the end", got)
}

func TestValidateBatch(t *testing.T) {
	out, err := validate(context.Background(), testSandbox(t), []validateItem{
		{ID: "a", Code: "import json, pandas\n", Mode: "exec", ReportUnavailable: true},
		{ID: "b", Code: "x >", Mode: "eval"},
		{ID: "c", Code: "def add(a, b) -> int:", Mode: "signature"},
		{ID: "d", Code: "x = 1", Mode: "signature"},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"json", "pandas"}, out.Items[0].Imports)
	require.Equal(t, []string{"pandas"}, out.Items[0].Unavailable)
	require.Equal(t, "syntax", out.Items[1].Findings[0].Rule)
	require.Equal(t, "add", out.Items[2].Function)
	require.Equal(t, "function", out.Items[3].Findings[0].Rule)
}
