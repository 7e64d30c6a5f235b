package lab

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestNumbersBounded: a number a lab makes is cheap to hold however large
// (cty keeps a 512-bit mantissa and a binary exponent) but written out as
// text it is as long as its exponent, and text of many digits is parsed in
// time quadratic in its length: `description = "${1e300000000}"`, a
// 60-byte lab, held rlab validate for hours (1e10000000: 71 s), and a lab
// of one 3 MB literal took 65 s. Each shape below ends within seconds with
// an error naming the number.
func TestNumbersBounded(t *testing.T) {
	digits := strings.Repeat("7", 2_000_000)
	head := "host \"a\" {\n  address = \"192.0.2.1\"\n}\n"
	for _, c := range []struct {
		name, lab string
		opts      LoadOptions
		varFile   string // a -var-file's text, .json when it starts with {
	}{
		{name: "template literal", lab: "lab \"n\" {\n  description = \"${1e300000000}\"\n}\n"},
		{name: "literal as string attribute", lab: "lab \"n\" {\n  description = upper(1e300000000)\n}\n"},
		{name: "tiny literal", lab: "lab \"n\" {\n  description = \"${1e-300000000}\"\n}\n"},
		{name: "negative literal", lab: "lab \"n\" {\n  description = \"${-1e300000000}\"\n}\n"},
		{name: "variable default", lab: "variable \"v\" {\n  type = string\n  default = 1e300000000\n}\nlab \"n\" {\n  description = var.v\n}\n"},
		{name: "products doubling", lab: "locals {\n  a = 1e900 * 1e900\n  b = local.a * local.a\n  c = local.b * local.b\n  d = local.c * local.c\n  e = local.d * local.d\n  f = local.e * local.e\n  g = local.f * local.f\n  h = local.g * local.g\n  i = local.h * local.h\n  j = local.i * local.i\n  k = local.j * local.j\n  l = local.k * local.k\n  m = local.l * local.l\n  n = local.m * local.m\n  o = local.n * local.n\n  p = local.o * local.o\n  q = local.p * local.p\n  r = local.q * local.q\n}\nlab \"n\" {\n  description = \"${local.r}\"\n}\n"},
		{name: "string operand", lab: "lab \"n\" {\n  description = \"${\"1e300000000\" * 1}\"\n}\n"},
		{name: "string var in arithmetic", lab: "variable \"v\" {\n  type = string\n  default = \"1\"\n}\nlab \"n\" {\n  description = join(\",\", [var.v + 0])\n}\n", opts: LoadOptions{Vars: map[string]string{"v": "1e300000000"}}},
		{name: "number var from -var", lab: "variable \"v\" {\n  type = number\n  default = 1\n}\nlab \"n\" {\n  description = \"${var.v}\"\n}\n", opts: LoadOptions{Vars: map[string]string{"v": "1e300000000"}}},
		{name: "tonumber", lab: "lab \"n\" {\n  description = \"${tonumber(\"1e300000000\")}\"\n}\n"},
		{name: "jsondecode", lab: "lab \"n\" {\n  description = jsonencode(jsondecode(\"[1e300000000]\"))\n}\n"},
		{name: "format of a string", lab: "lab \"n\" {\n  description = format(\"%d\", \"1e300000000\")\n}\n"},
		{name: "long literal", lab: "lab \"n\" {\n  description = " + digits + "\n}\n"},
		{name: "long text to jsondecode", lab: "lab \"n\" {\n  description = jsondecode(\"" + digits + "\")\n}\n"},
		{name: "long text to a number parameter", lab: "lab \"n\" {\n  description = max(\"" + digits + "\")\n}\n"},
		{name: "json var-file exponent", lab: "variable \"v\" {\n  type = string\n  default = \"x\"\n}\nlab \"n\" {\n  description = var.v\n}\n", varFile: "{\"v\": 1e300000000}"},
		{name: "json var-file digits", lab: "variable \"v\" {\n  type = number\n  default = 1\n}\nlab \"n\" {\n  description = \"${var.v}\"\n}\n", varFile: "{\"v\": " + digits + "}"},
		{name: "hcl var-file digits", lab: "variable \"v\" {\n  type = number\n  default = 1\n}\nlab \"n\" {\n  description = \"${var.v}\"\n}\n", varFile: "v = " + digits + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "lab.hcl")
			must(t, os.WriteFile(p, []byte(head+c.lab), 0o644))
			if c.varFile != "" {
				vf := filepath.Join(dir, "v.tfvars")
				if strings.HasPrefix(c.varFile, "{") {
					vf = filepath.Join(dir, "v.json")
				}
				must(t, os.WriteFile(vf, []byte(c.varFile), 0o644))
				c.opts.VarFiles = []string{vf}
			}
			start := time.Now()
			_, diags := Load([]string{p}, c.opts)
			took := time.Since(start)
			if !diags.HasErrors() {
				t.Errorf("no error:\n%s", diagLines(diags))
			}
			if took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
			}
			if !strings.Contains(diagLines(diags), "umber") {
				t.Errorf("the error does not name the number:\n%s", diagLines(diags))
			}
		})
	}
}

// TestNumbersOrdinary: numbers a lab uses (rates, sizes, tiny fractions)
// and text with long digit runs that is never a number pass.
func TestNumbersOrdinary(t *testing.T) {
	lab := "lab \"n\" {\n  description = \"${1e300} ${-1e-30} ${1e300 * 1e300} ${format(\"%.3f\", 0.5)} ${pow(2, 64)} ${strlen(\"" + strings.Repeat("9", 5000) + "\")}\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"
	p := filepath.Join(t.TempDir(), "lab.hcl")
	must(t, os.WriteFile(p, []byte(lab), 0o644))
	l, diags := Load([]string{p}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("ordinary numbers refused:\n%s", diagLines(diags))
	}
	if !strings.HasPrefix(l.Description, "1"+strings.Repeat("0", 300)+" ") {
		t.Errorf("description %.80q…", l.Description)
	}
}

// TestDecodersBounded: a file a lab decodes is refused by the values its
// text would make, before it is decoded: 16 MiB of "0," took jsondecode
// 2.1 GB and past two minutes, and of "x\n" csvdecode 7 GB and 89 s,
// before the evaluation budget saw the result. A decoded document of a
// lab's size still reads.
func TestDecodersBounded(t *testing.T) {
	big := map[string]string{
		"json": "[" + strings.Repeat("0,", 4<<20) + "0]",
		"csv":  "a\n" + strings.Repeat("x\n", 4<<20),
		"yaml": strings.Repeat("- 0\n", 2<<20),
	}
	for _, c := range []struct{ fn, ext, small string }{
		{"jsondecode", "json", `{"students": [{"name": "a", "host": "10.0.0.1"}, {"name": "b", "host": "10.0.0.2"}]}`},
		{"csvdecode", "csv", "name,host\na,10.0.0.1\nb,10.0.0.2\n"},
		{"yamldecode", "yaml", "students:\n  - name: a\n    host: 10.0.0.1\n  - name: b\n    host: 10.0.0.2\n"},
	} {
		t.Run(c.fn, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "big."+c.ext), []byte(big[c.ext]), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "small."+c.ext), []byte(c.small), 0o644))
			p := filepath.Join(dir, "lab.hcl")
			lab := func(f string) string {
				sel := ".students"
				if c.fn == "csvdecode" || strings.HasPrefix(f, "big") {
					sel = ""
				}
				return "lab \"n\" {\n  description = \"${length(" + c.fn + "(file(\"" + f + "\"))" + sel + ")}\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"
			}
			must(t, os.WriteFile(p, []byte(lab("big."+c.ext)), 0o644))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, diags := Load([]string{p}, LoadOptions{})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if !strings.Contains(diagLines(diags), EvalLimitSummary) {
				t.Errorf("not refused:\n%s", diagLines(diags))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; took > 5*time.Second || alloc > 256<<20 {
				t.Errorf("took %s and %d MiB, want under 5s and 256 MiB", took.Round(time.Millisecond), alloc>>20)
			}
			must(t, os.WriteFile(p, []byte(lab("small."+c.ext)), 0o644))
			l, diags := Load([]string{p}, LoadOptions{})
			if diags.HasErrors() {
				t.Fatalf("a small document refused:\n%s", diagLines(diags))
			}
			if want := map[string]string{"jsondecode": "2", "csvdecode": "2", "yamldecode": "2"}[c.fn]; l.Description != want {
				t.Errorf("length %q, want %s", l.Description, want)
			}
		})
	}
}

// TestSplitsBounded: split and regexall over a long string are refused by
// the values they would make, before they make them (16 MiB of ",": split
// took 1.1 GB, regexall 2.3 GB and 41 s); on a lab's strings they work.
func TestSplitsBounded(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte(strings.Repeat(",", 4<<20)), 0o644))
	for _, c := range []struct{ expr, want string }{
		{`length(split(",", file("c.txt")))`, ""},
		{`length(regexall(",", file("c.txt")))`, ""},
		{`length(regexall("(,)(,)?", file("c.txt")))`, ""},
		{`length(split("", substr(file("c.txt"), 0, 400000)))`, ""},
		{`length(split(",", "a,b,c"))`, "3"},
		{`length(regexall("[a-c]", "a,b,c"))`, "3"},
	} {
		t.Run(c.expr, func(t *testing.T) {
			p := filepath.Join(dir, "lab.hcl")
			must(t, os.WriteFile(p, []byte("lab \"n\" {\n  description = \"${"+c.expr+"}\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"), 0o644))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			l, diags := Load([]string{p}, LoadOptions{})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if c.want != "" {
				if diags.HasErrors() || l.Description != c.want {
					t.Fatalf("got %v:\n%s", l, diagLines(diags))
				}
				return
			}
			if !strings.Contains(diagLines(diags), EvalLimitSummary) {
				t.Errorf("not refused:\n%s", diagLines(diags))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; took > 5*time.Second || alloc > 256<<20 {
				t.Errorf("took %s and %d MiB, want under 5s and 256 MiB", took.Round(time.Millisecond), alloc>>20)
			}
		})
	}
}

// TestYAMLKeysBounded: a YAML document whose values follow none of the
// bytes the first count knew (a key opened by '?' without ':', lines broken
// by \r, NEL, LS or PS) is refused before yaml.v3 builds its tree too
// (issue 24, attack round 5: replace(format("%04000000d", 0), "0", "?\r"),
// a 200-byte lab and no data file, took `rlab validate` to 1.5 GB; the
// string budget allowed five times that).
func TestYAMLKeysBounded(t *testing.T) {
	for _, c := range []struct{ name, entry string }{
		{"question marks and CR", `?\r`},
		{"question marks and NEL", `?\u0085`},
		{"question marks and LS", `?\u2028`},
		{"keys and PS", `? k\u2029`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			lab := "lab \"n\" {\n  description = \"${length(yamldecode(replace(format(\"%02000000d\", 0), \"0\", \"" + c.entry + "\")))}\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"
			must(t, os.WriteFile(p, []byte(lab), 0o644))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, diags := Load([]string{p}, LoadOptions{})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if !strings.Contains(diagLines(diags), EvalLimitSummary) {
				t.Errorf("not refused by the budget:\n%s", diagLines(diags))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; took > 5*time.Second || alloc > 256<<20 {
				t.Errorf("took %s and %d MiB, want under 5s and 256 MiB", took.Round(time.Millisecond), alloc>>20)
			}
		})
	}
}

// TestTinyNumbersBounded: cty compares two numbers that are not whole by
// writing both out in full, 3-5 ms each near 1e-999 (50 µs near 1), so
// 50,000 comparisons inside the evaluation budget held rlab validate
// 190 s. A number below about 1e-30 is refused where it is born, as
// a literal, a product, a function's result or a -var.
func TestTinyNumbersBounded(t *testing.T) {
	for _, c := range []struct{ name, lab, varFlag string }{
		{name: "compared literal", lab: "locals {\n  t  = 1.5e-999\n  xs = [for a in range(200) : length([for b in range(250) : b if local.t == 1.50001e-999])]\n}\n"},
		{name: "compared product", lab: "locals {\n  t  = 1.5e-20 * 1e-20\n  xs = [for a in range(200) : length([for b in range(250) : b if local.t == 1.5e-40])]\n}\n"},
		{name: "set of products", lab: "locals {\n  s = setunion([1e-20 * 1e-20, 2e-20 * 1e-20], [1])\n}\n"},
		{name: "function result", lab: "locals {\n  t = pow(10, -40)\n}\n"},
		{name: "var", lab: "variable \"v\" {\n  type = number\n  default = 1\n}\n", varFlag: "1e-40"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			must(t, os.WriteFile(p, []byte("host \"a\" {\n  address = \"192.0.2.1\"\n}\n"+c.lab), 0o644))
			var opts LoadOptions
			if c.varFlag != "" {
				opts.Vars = map[string]string{"v": c.varFlag}
			}
			start := time.Now()
			_, diags := Load([]string{p}, opts)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
			}
			if !strings.Contains(diagLines(diags), NumberLimitSummary) {
				t.Errorf("not refused as %q:\n%s", NumberLimitSummary, diagLines(diags))
			}
		})
	}
}
