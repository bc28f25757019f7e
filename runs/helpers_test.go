package runs_test

import "github.com/wasmpy/wasmpy/internal/testing/skilltest"

// The package's shared helpers live in internal/testing/skilltest.
var (
	testExecutor = skilltest.Executor
	writeSkill   = skilltest.Write
	goodSkill    = skilltest.Good
)

const (
	goodYAML    = skilltest.GoodYAML
	goodSchema  = skilltest.GoodSchema
	goodHandler = skilltest.GoodHandler
)
