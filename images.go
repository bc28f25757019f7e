package wasmpy

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"strings"
)

// Image is an image file a run wrote to its workspace (PNG, JPEG, GIF,
// WebP or SVG, by its name and checked by its content), or handed to
// wasmpy.show() in the guest, which writes one: what a front end shows
// an agent (MCP image content, POST /exec's result).
type Image struct {
	Path     string `json:"path"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size"`
	// Data is the file (base64 in JSON); nil when Omitted says why.
	Data    []byte `json:"data,omitempty"`
	Omitted string `json:"omitted,omitempty"`
}

// The bounds of Result.Images: the files past them are listed without
// their data.
const (
	MaxImageBytes  = 2 << 20 // one image
	MaxImages      = 8       // images with data, per run
	MaxImagesBytes = 8 << 20 // their data together
)

var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml"}

// images finds the images among the files res's run wrote.
func images(res *Result) []Image {
	var out []Image
	count, total := 0, 0
	for _, f := range res.Files {
		want, ok := imageTypes[strings.ToLower(path.Ext(f.Path))]
		if !ok {
			continue
		}
		data, ok := res.File(f.Path)
		if !ok || !isImage(data, want) {
			continue
		}
		img := Image{Path: f.Path, MIMEType: want, Size: int64(len(data))}
		switch {
		case len(data) > MaxImageBytes:
			img.Omitted = fmt.Sprintf("larger than %d bytes", MaxImageBytes)
		case count >= MaxImages:
			img.Omitted = fmt.Sprintf("more than %d images", MaxImages)
		case total+len(data) > MaxImagesBytes:
			img.Omitted = fmt.Sprintf("the images together exceed %d bytes", MaxImagesBytes)
		default:
			img.Data = data
			count++
			total += len(data)
		}
		out = append(out, img)
	}
	return out
}

// isImage checks data is what its name says.
func isImage(data []byte, mime string) bool {
	if mime == "image/svg+xml" {
		head := data[:min(len(data), 4096)]
		return bytes.Contains(head, []byte("<svg"))
	}
	return http.DetectContentType(data) == mime
}
