package lab

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"
)

// stringsReplacerOf is what Redactor was before SECURITY 163: a
// strings.Replacer of the forms, longest first.
func stringsReplacerOf(forms []string, with string) *strings.Replacer {
	sorted := append([]string(nil), forms...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	var pairs []string
	seen := map[string]bool{}
	for _, f := range sorted {
		if f != "" && !seen[f] {
			seen[f] = true
			pairs = append(pairs, f, with)
		}
	}
	return strings.NewReplacer(pairs...)
}

// TestReplacerAsStringsReplacer: the linear Replacer replaces exactly what
// strings.Replacer of the same forms, longest first, replaced: leftmost,
// then longest, without overlaps, across its block boundaries too.
func TestReplacerAsStringsReplacer(t *testing.T) {
	tests := []struct {
		forms []string
		in    string
	}{
		{[]string{"hunter2"}, "pw=hunter2 and hunter2hunter2"},
		{[]string{"ab", "abcd", "bcx"}, "abcx abcd abc"},
		{[]string{"a", "aa", "aaa"}, "aaaaaaa b aa"},
		{[]string{"ab", "b", "bcd"}, "abcd bcd"},
		{[]string{"x"}, ""},
		{nil, "nothing"},
		{[]string{"", "s"}, "sss"},
		{[]string{"long" + strings.Repeat("-", 100), "g-"}, strings.Repeat("long"+strings.Repeat("-", 100), 3000)},
		{[]string{"ab", "b"}, strings.Repeat("a", replaceBlock-1) + "b" + strings.Repeat("ab", replaceBlock)},
		{[]string{strings.Repeat("x", replaceBlock+7) + "y", "xy"}, strings.Repeat("x", 3*replaceBlock) + "y" + strings.Repeat("x", replaceBlock) + "yxy"},
	}
	for _, tt := range tests {
		want := stringsReplacerOf(tt.forms, "(sensitive)").Replace(tt.in)
		if got := NewReplacer(tt.forms, "(sensitive)").Replace(tt.in); got != want {
			t.Errorf("forms %q on %.60q: got %.80q, want %.80q", tt.forms, tt.in, got, want)
		}
	}
	rnd := rand.New(rand.NewSource(1))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rnd.Intn(3)]
		}
		return string(b)
	}
	for i := 0; i < 3000; i++ {
		var forms []string
		for k := rnd.Intn(6); k >= 0; k-- {
			forms = append(forms, word(1+rnd.Intn(5)))
		}
		in := word(rnd.Intn(60))
		want := stringsReplacerOf(forms, "#").Replace(in)
		if got := NewReplacer(forms, "#").Replace(in); got != want {
			t.Fatalf("forms %q on %q: got %q, want %q", forms, in, got, want)
		}
	}
}

// TestRedactorLinear: the time to redact a text does not grow with the
// sensitive values' shapes (found in attack round 10, high: 3,000 values
// " b", "  b", … made strings.Replacer walk 3,000 steps a byte: 1 MiB of
// spaces took 41 s, `rlab report` of a received run directory an hour).
// The bound is a thousand times what it takes; before, it took minutes.
func TestRedactorLinear(t *testing.T) {
	var secrets []string
	for k := 1; k <= 3000; k++ {
		secrets = append(secrets, strings.Repeat(" ", k)+"b")
	}
	secrets = append(secrets, strings.Repeat("a", 200_000)+"b") // one long value: strings.Replacer compared it at every position
	r := Redactor(secrets)
	text := strings.Repeat(" ", 4<<20) + strings.Repeat("a", 4<<20)
	done := make(chan string, 1)
	go func() { done <- r.Replace(text) }()
	select {
	case out := <-done:
		if out != text {
			t.Errorf("a text without a sensitive value changed")
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("redacting 8 MiB against 3,000 nested values took over 60 s")
	}
	if got := r.Replace(strings.Repeat(" ", 10) + "b!"); got != "(sensitive)!" {
		t.Errorf("the longest value at a position is not the one replaced: %q", got)
	}
}

// TestSensitiveBounded: a lab's sensitive values are at most
// MaxSensitiveBytes together, from defaults and -var alike (found in attack
// round 10: a received run directory's lab chose them, and a 5 MB default
// of "<" took rlab report 600 MB and 12 s to build its redactor; every
// size loaded before).
func TestSensitiveBounded(t *testing.T) {
	const lab = `lab "s" {}
variable "a" {
  sensitive = true
  default   = %s
}
variable "b" {
  sensitive = true
  default   = "tok"
}
host "h" {
  address = "192.0.2.1"
}
`
	for _, tc := range []struct {
		name, def string
		vars      map[string]string
		refused   bool
	}{
		{"a key", `"` + strings.Repeat("k", 4000) + `"`, nil, false},
		{"at the bound", fmt.Sprintf(`format("%%%ds", "")`, MaxSensitiveBytes-3), nil, false},
		{"one value past it", `replace(format("%5000000s", ""), " ", "<")`, nil, true},
		{"many small values", `[for i in range(1000) : format("%100s", i)]`, nil, true},
		{"a -var past it", `"x"`, map[string]string{"b": strings.Repeat("v", MaxSensitiveBytes)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, diags := LoadSource("s.hcl", []byte(fmt.Sprintf(lab, tc.def)), t.TempDir(), LoadOptions{Vars: tc.vars})
			if tc.refused {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), "Sensitive values too large") {
					t.Fatalf("diagnostics %v: want the sensitive values refused", diags)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if len(l.Sensitive) != 2 {
				t.Errorf("sensitive values %d, want 2", len(l.Sensitive))
			}
		})
	}
}

// TestMaskWriterLinear: a stream is masked in time linear in it whatever
// the sensitive values are (found in attack round 10, medium: each flush
// searched its window once per form, and 5,000 three-byte values beside
// one of 16,000 "<" (about 31,000 forms, the longest 150 KB) made each
// 64 KiB of a workload's output cost a second of the controller's CPU).
// The bound is twenty times what it takes; 16 MiB took past a minute
// before.
func TestMaskWriterLinear(t *testing.T) {
	var secrets []string
	for a := byte('!'); a <= '~' && len(secrets) < 5000; a++ {
		for b := byte('!'); b <= '~' && len(secrets) < 5000; b++ {
			secrets = append(secrets, string([]byte{a, b, '<'}))
		}
	}
	secrets = append(secrets, strings.Repeat("<", 16000))
	var out strings.Builder
	w := MaskWriter(secrets, &out)
	chunk := []byte(strings.Repeat(`!!!"`, 16<<10))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 256 {
			w.Write(chunk)
		}
		w.Write([]byte("!#<"))
		w.Close()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("masking 16 MiB against %d values took over 30 s", len(secrets))
	}
	if want := 256*len(chunk) + len("(sensitive)"); out.Len() != want || !strings.HasSuffix(out.String(), "(sensitive)") {
		t.Errorf("masked output of %d bytes ending %q, want %d ending (sensitive)", out.Len(), out.String()[max(0, out.Len()-20):], want)
	}
}

// FuzzReplacer: the linear Replacer's output is strings.Replacer's of the
// same forms, longest first, and replacing the text in two pieces cut where
// SafeCut says gives the same.
func FuzzReplacer(f *testing.F) {
	f.Add("abcx abcd abc", "ab", "abcd", "bcx", 5)
	f.Add("aaaaaaa", "a", "aa", "aaa", 3)
	f.Fuzz(func(t *testing.T, text, a, b, c string, cut int) {
		if len(text) > 1<<12 {
			return
		}
		forms := []string{a, b, c}
		r := NewReplacer(forms, "#")
		if got, want := r.Replace(text), stringsReplacerOf(forms, "#").Replace(text); got != want {
			t.Fatalf("forms %q on %q: got %q, want %q", forms, text, got, want)
		}
		cut = abs(cut) % (len(text) + 1)
		at := r.SafeCut(text, cut)
		if at > cut || at < 0 {
			t.Fatalf("SafeCut(%q, %d) = %d", text, cut, at)
		}
		if got, want := r.Replace(text[:at])+r.Replace(text[at:]), r.Replace(text); got != want {
			t.Fatalf("forms %q on %q cut at %d (asked %d): %q, want %q", forms, text, at, cut, got, want)
		}
	})
}

// TestMaskWriterOverlappingValues: a stream of overlapping copies of a
// sensitive value is masked as it comes, not held (found in attack round
// 11, high: SafeCut moved the cut back over every form that crossed it,
// and copies of "8080" in "808080…" each cross the next, so the cut went
// back to the stream's start: MaskWriter held all of a workload's output,
// up to the 20 GiB pull cap, and each write read it all again, 8 MiB in
// 27 s, a day at 1 GiB). Here 2 MiB of such output, and of a chain of a
// value whose last byte is its first, are masked holding little.
func TestMaskWriterOverlappingValues(t *testing.T) {
	for _, tc := range []struct{ secret, unit string }{
		{"8080", "80"},
		{"x-secret-x", "x-secret-"},
		{"aaaa", "a"},
	} {
		var out strings.Builder
		w := MaskWriter([]string{tc.secret}, &out)
		chunk := strings.Repeat(tc.unit, (32<<10)/len(tc.unit))
		var text strings.Builder
		held := 0
		for range 64 {
			w.Write([]byte(chunk))
			text.WriteString(chunk)
			held = max(held, len(w.(*maskWriter).buf))
		}
		w.Close()
		if held > 2*flushAt {
			t.Errorf("%q: the mask held %d bytes of the stream, want at most %d", tc.secret, held, 2*flushAt)
		}
		if want := Redactor([]string{tc.secret}).Replace(text.String()); out.String() != want {
			t.Errorf("%q: masked stream differs from the redacted whole", tc.secret)
		}
	}
}

// TestMaskWriterFewBytesAtATime: a stream written a few bytes at a time is
// masked reading each byte a bounded number of times, whatever the longest
// form (found in attack round 11, high with a hostile host: what a flush
// kept could be more than flushAt past the held-back part when a form of
// 64 KiB or more crossed the cut, and then every write flushed again,
// reading all it kept: 1 MiB of a 270 KB form in 16-byte writes took 111 s,
// a month at the pull cap). The flushes are counted, not timed.
func TestMaskWriterFewBytesAtATime(t *testing.T) {
	secret := strings.Repeat("<", 30000) // its longest form is 270 KB
	long := redactForms([]string{secret})[0]
	const size = 1 << 20
	text := strings.Repeat(long, size/len(long)+1)[:size]
	var out strings.Builder
	w := MaskWriter([]string{secret}, &out)
	for i := 0; i < len(text); i += 16 {
		w.Write([]byte(text[i:min(len(text), i+16)]))
	}
	flushes := w.(*maskWriter).flushes
	w.Close()
	if most := 2 * size / flushAt; flushes > most {
		t.Errorf("%d flushes for %d bytes written 16 at a time, want at most %d", flushes, size, most)
	}
	if want := Redactor([]string{secret}).Replace(text); out.String() != want {
		t.Errorf("masked stream differs from the redacted whole")
	}
}

// TestReplaceTail: the end of a text cut inside a sensitive value keeps no
// part of it (found in attack round 12, high: a host's stderr tail cut
// inside a token kept the token's end, which Replace no longer matched).
// Values of the letters XYZ in texts of abc, cut at every byte: no X, Y
// or Z is left; a start that merely ends a value is replaced too, and a
// value that starts in the replaced start and reaches past it with it.
func TestReplaceTail(t *testing.T) {
	tests := []struct {
		forms   []string
		in, out string
	}{
		{[]string{"hunter2"}, "er2 failed", "# failed"},
		{[]string{"hunter2"}, "2 failed, hunter2", "# failed, #"},
		{[]string{"hunter2"}, "no value", "no value"},
		{[]string{"hunter2"}, "hunter2", "#"},
		{[]string{"abXY", "XYZsecret"}, "XYZsecret tail", "# tail"}, // XY ends one, XYZsecret starts in it
		{[]string{"ab", "bcd"}, "bcd", "#"},
		{nil, "er2", "er2"},
		{[]string{"x"}, "", ""},
	}
	for _, tt := range tests {
		if got := NewReplacer(tt.forms, "#").ReplaceTail(tt.in); got != tt.out {
			t.Errorf("forms %q on %q: got %q, want %q", tt.forms, tt.in, got, tt.out)
		}
	}
	cutCorpus(1, 2000, func(forms []string, in string) {
		r := NewReplacer(forms, "#")
		for c := 0; c <= len(in); c++ {
			if got := r.ReplaceTail(in[c:]); strings.ContainsAny(got, "XYZ") {
				t.Fatalf("forms %q on %q cut at %d: %q", forms, in, c, got)
			}
		}
	})
}

// TestReplaceHead: the start of a text cut inside a sensitive value (a
// file's first bytes a host read) keeps no part of it, and a text cut at
// both ends neither (found in attack round 12, high, with ReplaceTail's).
// Values of XYZ in texts of abc, cut at every byte.
func TestReplaceHead(t *testing.T) {
	tests := []struct {
		forms   []string
		in, out string
	}{
		{[]string{"hunter2"}, "failed for hunt", "failed for #"},
		{[]string{"hunter2"}, "hunter2 then hu", "# then #"},
		{[]string{"hunter2"}, "no value", "no value"},
		{[]string{"XYZsecret", "cXY"}, "abcXYZsec", "ab#"}, // cXY reaches into the cut value
		{nil, "hunt", "hunt"},
	}
	for _, tt := range tests {
		if got := NewReplacer(tt.forms, "#").ReplaceHead(tt.in); got != tt.out {
			t.Errorf("forms %q on %q: got %q, want %q", tt.forms, tt.in, got, tt.out)
		}
	}
	cutCorpus(2, 1000, func(forms []string, in string) {
		r := NewReplacer(forms, "#")
		for c := 0; c <= len(in); c++ {
			if got := r.ReplaceHead(in[:c]); strings.ContainsAny(got, "XYZ") {
				t.Fatalf("forms %q on %q cut at %d: %q", forms, in, c, got)
			}
			for d := c; d <= len(in); d += 3 {
				if got := r.ReplaceCut(in[c:d], true, true); strings.ContainsAny(got, "XYZ") {
					t.Fatalf("forms %q on %q cut to [%d:%d]: %q", forms, in, c, d, got)
				}
			}
		}
	})
}

// cutCorpus calls fn n times with random values of XYZ (1 to 4 of them)
// and a text of abc holding copies of them apart (Replace leaves part of
// overlapping ones: "XYY" of the values XY and YY keeps a Y, cut or not),
// from seed.
func cutCorpus(seed int64, n int, fn func(forms []string, in string)) {
	rnd := rand.New(rand.NewSource(seed))
	word := func(letters string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rnd.Intn(len(letters))]
		}
		return string(b)
	}
	for i := 0; i < n; i++ {
		var forms []string
		for k := rnd.Intn(4); k >= 0; k-- {
			forms = append(forms, word("XYZ", 1+rnd.Intn(8)))
		}
		in := word("abc", rnd.Intn(10))
		for k := rnd.Intn(4); k >= 0; k-- {
			in += forms[rnd.Intn(len(forms))] + word("abc", 1+rnd.Intn(10))
		}
		fn(forms, in)
	}
}
