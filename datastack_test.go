package wasmpy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/needs"
)

// numpy 2 lists f2py in __all__, which sci leaves out: a star import and
// numpy.matlib (which does one) work, and f2py says why it cannot.
func TestNumpyStarImport(t *testing.T) {
	res := runNumpy(t, wasmpy.Job{Code: `
from numpy import *
import numpy.matlib, numpy.f2py
print(array([1, 2]).sum(), numpy.matlib.eye(2).tolist(), f2py is numpy.f2py)
for f in (lambda: numpy.f2py.compile("x"), lambda: numpy.f2py.run_main([])):
    try:
        f()
    except NotImplementedError as e:
        print(e)
try:
    numpy.f2py.crackfortran
except AttributeError as e:
    print("AttributeError", "not available in the wasmpy sandbox" in str(e))
`})
	require.Nil(t, res.Error, res.Stderr)
	msg := "numpy.f2py is not available in the wasmpy sandbox: building Fortran extensions needs a compiler and subprocesses\n"
	require.Equal(t, "3 [[1.0, 0.0], [0.0, 1.0]] True\n"+msg+msg+"AttributeError True\n", res.Stdout)
}

// In the interpreter without numpy, a ModuleNotFoundError for numpy or
// pandas says where they are; for anything else, it says what python3 says.
func TestMissingNumpyHint(t *testing.T) {
	if testSandbox(t).Interpreter().Kind != "core" {
		needs.Skipf(t, "the default build (make interpreter): the npm interpreter runs here")
	}
	for _, mod := range []string{"numpy", "pandas", "numpy.linalg"} {
		res := run(t, wasmpy.Job{Code: "import " + mod})
		require.NotNil(t, res.Error)
		require.Equal(t, "ModuleNotFoundError", res.Error.Type)
		top := strings.Split(mod, ".")[0]
		require.Contains(t, res.Error.Message, "; "+top+" is in wasmpy's sci interpreter: `wasmpy exec --interpreter sci`")
		require.Contains(t, res.Stderr, "wasmpy serve and wasmpy mcp use it")
	}
	res := run(t, wasmpy.Job{Code: "import nosuchmodule"})
	require.Equal(t, "No module named 'nosuchmodule'", res.Error.Message)
	// Caught, it is an ordinary ModuleNotFoundError.
	res = run(t, wasmpy.Job{Code: "try:\n    import numpy\nexcept ImportError as e:\n    print(e.name)"})
	require.Nil(t, res.Error)
	require.Equal(t, "numpy\n", res.Stdout)
}

// pngBytes is a 1x1 PNG, made in the guest.
const pngMaker = `
import struct, zlib
def png(w=1, h=1):
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
`

func TestImages(t *testing.T) {
	res := run(t, wasmpy.Job{Code: pngMaker + `
import os, wasmpy
class Chart:  # as pygal's charts render
    def render(self):
        return b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>'
class Repr:
    def _repr_png_(self):
        return png(2, 2)
print(wasmpy.show(png()), wasmpy.show(Chart()), wasmpy.show(Repr(), name="plots/r.png"))
with open("direct.jpg", "wb") as f:
    f.write(b"\xff\xd8\xff\xe0" + b"\x00" * 20)
with open("fake.png", "w") as f:
    f.write("not a png")
with open("big.png", "wb") as f:
    f.write(png() + b"\x00" * (2 << 20))
for bad in (b"plain bytes", 42):
    try:
        wasmpy.show(bad)
    except (ValueError, TypeError) as e:
        print(type(e).__name__, e)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "/workspace/figure-1.png /workspace/figure-2.svg /workspace/plots/r.png\n"+
		"ValueError show(): not a PNG, JPEG, GIF, WebP or SVG image\n"+
		"TypeError show() wants image bytes, SVG text or a chart, not int\n", res.Stdout)
	got := map[string]wasmpy.Image{}
	for _, im := range res.Images {
		got[im.Path] = im
	}
	require.Len(t, got, 5, "fake.png is not an image: %+v", res.Images)
	require.Equal(t, "image/png", got["figure-1.png"].MIMEType)
	data, _ := res.File("figure-1.png")
	require.Equal(t, data, got["figure-1.png"].Data)
	require.Equal(t, "image/svg+xml", got["figure-2.svg"].MIMEType)
	require.Equal(t, "image/png", got["plots/r.png"].MIMEType)
	require.Equal(t, "image/jpeg", got["direct.jpg"].MIMEType)
	require.Nil(t, got["big.png"].Data)
	require.Equal(t, "larger than 2097152 bytes", got["big.png"].Omitted)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"images":[{"path":"big.png","mime_type":"image/png","size":`)
}

func TestImagesBounded(t *testing.T) {
	res := run(t, wasmpy.Job{Code: pngMaker + `
import wasmpy
for i in range(10):
    wasmpy.show(png(1, i + 1))
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Len(t, res.Images, 10)
	with := 0
	for _, im := range res.Images {
		if im.Data != nil {
			with++
		} else {
			require.Equal(t, "more than 8 images", im.Omitted)
		}
	}
	require.Equal(t, wasmpy.MaxImages, with)
}
