package wasmpy_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// pillowWorkspace is a workspace holding photo.png, a 40x30 PNG made by
// Go's encoder: red left half, blue right half.
func pillowWorkspace(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for y := range 30 {
		for x := range 40 {
			c := color.RGBA{255, 0, 0, 255}
			if x >= 20 {
				c = color.RGBA{0, 0, 255, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "photo.png"), b.Bytes(), 0o644))
	return dir
}

func decodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	return img
}

// Pillow in the sci interpreter: a PNG of the workspace opened, resized,
// converted, drawn on and saved into the overlay (GIF too), each result
// read back by Go's decoders; wasmpy.show() and Image.show() return it as
// an image of the Result. quantize(), split() and getextrema() are methods
// Pillow declares with one parameter and CPython calls with two: on wasm
// that mismatch trapped until the recipe's patch gave them the second.
func TestPillow(t *testing.T) {
	res := runNumpy(t, wasmpy.Job{Workspace: pillowWorkspace(t), Code: `
import os, wasmpy
from PIL import Image, ImageDraw, ImageFilter, ImageOps, features
os.makedirs("out")
im = Image.open("photo.png")
print(im.format, im.size, im.mode, im.getpixel((0, 0)), im.getpixel((39, 29)))
small = im.resize((20, 15), Image.LANCZOS)
gray = small.convert("L")
print(small.size, gray.mode, gray.getpixel((0, 0)), gray.getextrema(), [b.mode for b in small.split()])
d = ImageDraw.Draw(im)
d.rectangle((0, 0, 9, 9), fill=(0, 255, 0))
d.line((0, 29, 39, 29), fill="white", width=1)
d.ellipse((25, 5, 35, 15), outline="yellow")
d.text((1, 12), "hi", fill="black")
im.filter(ImageFilter.GaussianBlur(1)).save("out/blurred.png")
im.save("out/drawn.png")
ImageOps.grayscale(im).quantize(4).save("out/quant.gif")
print(im.quantize(8).mode, len(im.getcolors()), features.check("zlib"), features.check("jpg"))
print(wasmpy.show(small))
small.convert("CMYK").show()
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "PNG (40, 30) RGB (255, 0, 0) (0, 0, 255)\n"+
		"(20, 15) L 76 (29, 76) ['L', 'L', 'L']\n"+
		"P 6 True False\n"+
		"/workspace/figure-1.png\n", res.Stdout)

	data, ok := res.File("out/drawn.png")
	require.True(t, ok, "files: %+v", res.Files)
	drawn := decodePNG(t, data)
	require.Equal(t, image.Rect(0, 0, 40, 30), drawn.Bounds())
	r, g, b, _ := drawn.At(5, 5).RGBA()
	require.Equal(t, []uint32{0, 0xffff, 0}, []uint32{r, g, b}, "the green square")
	r, g, b, _ = drawn.At(15, 29).RGBA()
	require.Equal(t, []uint32{0xffff, 0xffff, 0xffff}, []uint32{r, g, b}, "the white line")
	r, _, b, _ = drawn.At(38, 20).RGBA()
	require.Equal(t, []uint32{0, 0xffff}, []uint32{r, b}, "the blue half, untouched")
	data, ok = res.File("out/blurred.png")
	require.True(t, ok)
	require.Equal(t, image.Rect(0, 0, 40, 30), decodePNG(t, data).Bounds())
	data, ok = res.File("out/quant.gif")
	require.True(t, ok)
	q, err := gif.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	require.LessOrEqual(t, len(q.(*image.Paletted).Palette), 4)

	got := map[string]wasmpy.Image{}
	for _, im := range res.Images {
		got[im.Path] = im
	}
	for _, name := range []string{"figure-1.png", "figure-2.png"} {
		require.Equal(t, "image/png", got[name].MIMEType, name)
		require.Equal(t, image.Rect(0, 0, 20, 15), decodePNG(t, got[name].Data).Bounds(), name)
	}
	require.Equal(t, "image/gif", got["out/quant.gif"].MIMEType)
	require.Equal(t, "image/png", got["out/drawn.png"].MIMEType)
}

// The sci build's packages include Pillow: a requirement on it is met.
func TestPillowRequirement(t *testing.T) {
	sb := numpySandbox(t)
	require.NoError(t, sb.Require("Pillow>=11", "pillow==11.1.0"))
	require.Error(t, sb.Require("pillow>=12"))
}

// A corrupt or hostile image file raises a Python exception (caught here,
// and uncaught it ends the run as an exception), never a trap; so does a
// JPEG, whose decoder the sci build leaves out.
func TestPillowCorruptImages(t *testing.T) {
	dir := pillowWorkspace(t)
	good, err := os.ReadFile(filepath.Join(dir, "photo.png"))
	require.NoError(t, err)
	badCRC := bytes.Clone(good)
	badCRC[30] ^= 0xff // inside IHDR: its CRC no longer matches
	// A valid 1x1 header whose dimensions are then claimed to be huge.
	bomb := bytes.Clone(good)
	copy(bomb[16:24], []byte{0, 0x01, 0, 0, 0, 0x01, 0, 0}) // 65536 x 65536
	binary.BigEndian.PutUint32(bomb[29:33], crc32.ChecksumIEEE(bomb[12:29]))
	// The compressed pixels damaged, their chunk's CRC made right: zlib's
	// inflate is what fails.
	badZlib := bytes.Clone(good)
	idat := bytes.Index(badZlib, []byte("IDAT"))
	n := int(binary.BigEndian.Uint32(badZlib[idat-4:]))
	for i := idat + 4 + 2; i < idat+4+n; i += 3 {
		badZlib[i] ^= 0x5a
	}
	binary.BigEndian.PutUint32(badZlib[idat+4+n:], crc32.ChecksumIEEE(badZlib[idat:idat+4+n]))
	var jpg bytes.Buffer
	src, err := png.Decode(bytes.NewReader(good))
	require.NoError(t, err)
	require.NoError(t, jpeg.Encode(&jpg, src, nil))
	files := map[string][]byte{
		"truncated.png": good[:len(good)/2],
		"garbage.png":   append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0x41}, 200)...),
		"badcrc.png":    badCRC,
		"bomb.png":      bomb,
		"badzlib.png":   badZlib,
		"notimage.png":  []byte("hello"),
		"broken.gif":    []byte("GIF89a\x10\x00\x10\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00,\x00\x00\x00\x00\x10\x00\x10\x00\x00\x02\xff\xff\xff"),
		"photo.jpg":     jpg.Bytes(),
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	res := runNumpy(t, wasmpy.Job{Workspace: dir, Code: `
from PIL import Image
for name in ["truncated.png", "garbage.png", "badcrc.png", "badzlib.png", "bomb.png", "notimage.png", "broken.gif", "photo.jpg"]:
    try:
        with Image.open(name) as im:
            im.load()
        print(name, "loaded")
    except Exception as e:
        print(name, type(e).__name__, e)
print(Image.open("photo.png").size)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "truncated.png OSError image file is truncated\n"+
		"garbage.png OSError Truncated File Read\n"+
		"badcrc.png UnidentifiedImageError cannot identify image file 'badcrc.png'\n"+
		"badzlib.png OSError broken data stream when reading image file\n"+
		"bomb.png DecompressionBombError Image size (4294967296 pixels) exceeds limit of 178956970 pixels, could be decompression bomb DOS attack.\n"+
		"notimage.png UnidentifiedImageError cannot identify image file 'notimage.png'\n"+
		"broken.gif OSError image file is truncated (3 bytes not processed)\n"+
		"photo.jpg OSError decoder jpeg not available\n"+
		"(40, 30)\n", res.Stdout)

	// Uncaught, the same errors end the run as the guest's exception.
	for name, message := range map[string]string{"truncated.png": "truncated", "photo.jpg": "decoder jpeg not available"} {
		res = runNumpy(t, wasmpy.Job{Workspace: dir, Code: "from PIL import Image\nImage.open('" + name + "').load()"})
		require.NotNil(t, res.Error, res.Stdout)
		require.Equal(t, wasmpy.KindException, res.Error.Kind, res.Stderr)
		require.Equal(t, "OSError", res.Error.Type)
		require.Contains(t, res.Error.Message, message)
	}
}

// What the sci build's Pillow lacks (no JPEG, FreeType, LittleCMS or XCB,
// no Ghostscript or clipboard tools to run) raises a Python exception that
// names it, and the run goes on.
func TestPillowMissingFeatures(t *testing.T) {
	res := runNumpy(t, wasmpy.Job{Code: `
import io
from PIL import Image, ImageCms, ImageFont, ImageGrab
eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 4 4\n"
for name, f in [("jpeg", lambda: Image.new("RGB", (4, 4)).save(io.BytesIO(), "JPEG")),
                ("pdf", lambda: Image.new("RGB", (4, 4)).save(io.BytesIO(), "PDF")),
                ("truetype", lambda: ImageFont.truetype("DejaVuSans.ttf", 12)),
                ("cms", lambda: ImageCms.createProfile("sRGB")),
                ("eps", lambda: Image.open(io.BytesIO(eps)).load()),
                ("grab", lambda: ImageGrab.grab())]:
    try:
        f()
        print(name, "worked")
    except Exception as e:
        print(name, type(e).__name__, e)
print(Image.new("RGB", (4, 4)).size)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "jpeg OSError encoder jpeg not available\n"+
		"pdf OSError encoder jpeg not available\n"+
		"truetype ImportError cannot import name '_imagingft' from 'PIL' (/usr/local/lib/python3.13/PIL/__init__.py)\n"+
		"cms ImportError cannot import name '_imagingcms' from 'PIL' (/usr/local/lib/python3.13/PIL/__init__.py)\n"+
		"eps OSError Unable to locate Ghostscript on paths\n"+
		"grab OSError Pillow was built without XCB support\n"+
		"(4, 4)\n", res.Stdout)
}
