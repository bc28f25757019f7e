package hostfuncs

import (
	"context"
	"encoding/json"
)

// Bytes is a capability's value that reaches the guest as Python bytes. The
// host-call transport carries it raw; in JSON (any other caller of the
// capability) it is a base64 string, as any []byte.
type Bytes []byte

// Text is a capability's value that reaches the guest as str. It must be
// valid UTF-8: the transport carries it raw and the guest decodes it
// strictly; in JSON it is a string.
type Text []byte

// MarshalJSON encodes t as a JSON string.
func (t Text) MarshalJSON() ([]byte, error) { return json.Marshal(string(t)) }

type dataKey struct{}

// WithData returns ctx carrying data, the raw bytes a guest attached to a
// call (write_file's content): the transport's way to pass bulk bytes
// beside the JSON arguments without base64.
func WithData(ctx context.Context, data []byte) context.Context {
	if data == nil {
		data = []byte{}
	}
	return context.WithValue(ctx, dataKey{}, data)
}

// Data returns the raw bytes attached to the call, and whether there were
// any (an empty attachment counts).
func Data(ctx context.Context) ([]byte, bool) {
	b, ok := ctx.Value(dataKey{}).([]byte)
	return b, ok
}
