package lab

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// maskChunked writes text to a MaskWriter in pieces of the given sizes
// (cycled) and returns what came out.
func maskChunked(secrets []string, text string, sizes []int) string {
	var out bytes.Buffer
	w := MaskWriter(secrets, &out)
	for i, k := 0, 0; i < len(text); k++ {
		n := max(1, sizes[k%len(sizes)])
		n = min(n, len(text)-i)
		w.Write([]byte(text[i : i+n]))
		i += n
	}
	w.Close()
	return out.String()
}

// TestMaskWriterAsRedactor: however a stream is cut into writes, the
// masked stream is what Redactor makes of it whole, and holds no secret.
func TestMaskWriterAsRedactor(t *testing.T) {
	secret := "TOKEN-" + `<a&b>"c\d'e` + "\tf\x1b"
	filler := strings.Repeat("x", flushAt-7)
	for _, tt := range []struct {
		name  string
		text  string
		sizes []int
	}{
		{"one write", "say " + secret + " twice " + secret + "\n", []int{1 << 20}},
		{"byte by byte", "a" + secret + "b", []int{1}},
		{"cut across the flush point", filler + secret + filler + secret + filler, []int{flushAt - 3, 5, 17}},
		{"JSON form across it", filler + `{"t":` + jsonOf(secret) + `}` + filler, []int{flushAt + 2, 1, 3}},
		{"overlapping secrets", filler + "abcabcTOKEN-" + filler, []int{flushAt - 1, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			secrets := []string{secret, "abcabc", "cabcT"}
			got := maskChunked(secrets, tt.text, tt.sizes)
			want := Redactor(secrets).Replace(tt.text)
			if got != want {
				t.Errorf("masked stream differs from the redacted whole (%d vs %d bytes)", len(got), len(want))
			}
			if strings.Contains(got, "TOKEN-<") {
				t.Error("the secret is in the masked stream")
			}
		})
	}
	if MaskWriter(nil, &bytes.Buffer{}) != nil {
		t.Error("MaskWriter without secrets should be nil")
	}
}

func FuzzMaskWriter(f *testing.F) {
	f.Add("xx SECRET yy", "SECRET", 3, 5)
	f.Fuzz(func(t *testing.T, text, secret string, a, b int) {
		if secret == "" || len(text) > 1<<16 {
			return
		}
		a, b = 1+abs(a)%(flushAt*2), 1+abs(b)%97
		text = strings.Repeat(text, 1+flushAt/(len(text)+1))
		got := maskChunked([]string{secret}, text, []int{a, b})
		if want := Redactor([]string{secret}).Replace(text); got != want {
			t.Fatalf("chunked %d,%d: masked stream differs from the redacted whole", a, b)
		}
	})
}

func jsonOf(s string) string { b, _ := json.Marshal(s); return string(b) }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
