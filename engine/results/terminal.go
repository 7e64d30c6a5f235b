package results

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// TerminalText renders the Markdown rlab writes (summary.md: headings,
// pipe tables, lists, emphasis, code spans) as plain text for a terminal:
// headings underlined, tables aligned in columns, emphasis and code marks
// dropped, escapes undone. Control characters (text that came from hosts)
// are escaped (termsafe) so it cannot move the cursor. A folded part
// (<details>: the full kernel counter tables, a class's ready students) is
// its summary line alone, with a pointer to the flag of `rlab show` that
// unfolds it (--counters, --all).
func TerminalText(md []byte) []byte { return TerminalTextWith(md, Unfold{}) }

// TerminalTextUnfolded is TerminalText with the kernel counter tables
// shown, their summary line as a heading (`rlab show --counters`).
func TerminalTextUnfolded(md []byte) []byte { return TerminalTextWith(md, Unfold{Counters: true}) }

// Unfold says which folded parts of summary.md TerminalTextWith shows.
type Unfold struct {
	Counters bool // the kernel counter tables (rlab show --counters)
	Students bool // a class's ready students (rlab show --all)
}

// detailsOpen matches the line a folded part opens with, as summary.md
// writes it: <details class="students"> folds a class's ready students,
// a bare <details> the kernel counters.
var detailsOpen = regexp.MustCompile(`^<details(?: class="([a-z]+)")?><summary>(.*)</summary>\s*$`)

// TerminalTextWith is TerminalText with the parts named by u unfolded.
func TerminalTextWith(md []byte, u Unfold) []byte {
	var out bytes.Buffer
	lines := strings.Split(strings.TrimRight(string(md), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := detailsOpen.FindStringSubmatch(l); m != nil {
			t := inline(m[2])
			unfold, flag := u.Counters, "--counters"
			if m[1] == "students" {
				unfold, flag = u.Students, "--all"
			}
			if unfold {
				out.WriteString(t + ":\n")
				continue
			}
			out.WriteString(t + " (rlab show " + flag + ")\n")
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "</details>" {
				i++
			}
			i++ // the closing line
			if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "" {
				i++ // and the blank line after it: the summary line had one
			}
			out.WriteString("\n")
			continue
		}
		if strings.TrimSpace(l) == "</details>" {
			continue
		}
		switch {
		case strings.HasPrefix(l, "|"):
			j := i
			for j < len(lines) && strings.HasPrefix(lines[j], "|") {
				j++
			}
			writeTable(&out, lines[i:j])
			i = j - 1
		case strings.HasPrefix(l, "# "), strings.HasPrefix(l, "## "), strings.HasPrefix(l, "### "):
			level := strings.Index(l, " ")
			t := inline(l[level+1:])
			out.WriteString(t + "\n")
			u := "="
			if level > 1 {
				u = "-"
			}
			out.WriteString(strings.Repeat(u, utf8.RuneCountInString(t)) + "\n")
		default:
			out.WriteString(inline(l) + "\n")
		}
	}
	return out.Bytes()
}

var (
	mdStrong = regexp.MustCompile(`\*\*(.+?)\*\*`)
	mdCodeSp = regexp.MustCompile("`([^`]*)`")
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)
	mdUnesc  = strings.NewReplacer(`\\`, `\`, `\*`, `*`, "\\`", "`", `\|`, "|", `\[`, "[", `\]`, "]", "&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// inline drops emphasis, code and link marks of one line of text.
func inline(s string) string {
	s = mdStrong.ReplaceAllString(s, "$1")
	s = mdCodeSp.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1 ($2)")
	return termsafe.Line(mdUnesc.Replace(s))
}

// splitRow splits a pipe table row into its cells, honouring "\|".
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			cur.WriteByte(l[i])
			cur.WriteByte(l[i+1])
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var mdAlign = regexp.MustCompile(`^:?-+:?$`)

// maxPadWidth is the widest a column is padded to: a longer cell is
// written as it is, past its column. Padding every row to the longest cell
// made a 220 KB summary.md (one 100 KB cell over 20,000 rows) 2 GB of
// output, 10 GB of memory and a minute of `rlab show` (SECURITY 120); a
// table is also aligned only while that costs a few times its text.
const maxPadWidth = 200

func writeTable(out *bytes.Buffer, rows []string) {
	var cells [][]string
	var right []bool
	for _, r := range rows {
		cs := splitRow(r)
		if isAlign(cs) {
			for _, c := range cs {
				right = append(right, strings.HasSuffix(c, ":") && !strings.HasPrefix(c, ":"))
			}
			continue
		}
		for i := range cs {
			cs[i] = inline(cs[i])
		}
		if strings.TrimSpace(strings.Join(cs, "")) == "" {
			continue // an empty header ("| | |") of a key-value table
		}
		cells = append(cells, cs)
	}
	var width []int
	for _, r := range cells {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], min(utf8.RuneCountInString(c), maxPadWidth))
		}
	}
	// Aligned, the table may be at most a few times its markdown (and a
	// MiB more): past that, its rows are written unpadded.
	in, aligned := 0, 0
	for _, r := range rows {
		in += len(r) + 1
	}
	for _, r := range cells {
		for i, c := range r {
			aligned += max(width[i], len(c)) + 2
		}
	}
	if aligned > 4*in+1<<20 {
		clear(width)
	}
	for _, r := range cells {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", max(0, width[i]-utf8.RuneCountInString(c)))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(right) && right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		out.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

func isAlign(cs []string) bool {
	for _, c := range cs {
		if !mdAlign.MatchString(c) {
			return false
		}
	}
	return len(cs) > 0
}
