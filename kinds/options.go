package kinds

import (
	"fmt"
	"strings"
	"time"
)

// Options are the values of a workload's options: what the lab file set,
// checked against its tool's rules (engine/lab for the common ones, the
// tool's family through kinds/toolopts for the rest), and what its op
// kind reads (steps). One type that both models embed. An option several
// families share is a field here and a toolopts.Option; an option of one
// family is an Option in its package, stored in Own.
type Options struct {
	Command    []string      // exec: the argv to run
	Sizes      []int64       // nil = the tool's default size
	Iterations int64         // 0 = the tool's default (or Duration)
	Duration   time.Duration // 0 = run Iterations
	QPs        int           // 0 = the tool's default (1)
	Transport  string        // RC, UC or UD; "" when the tool fixes it
	Bytes      int64         // tcp
	Timeout    time.Duration
	Repeat     int
	Args       []string // extra argv appended to the tool

	// Program (tool program) is the program block the workload runs,
	// shipped to its hosts and built there before it runs.
	Program *Source
	// ServerCommand and ClientCommand (tool program, two-sided) are argvs
	// whose elements may hold SelfRef placeholders, filled at run time with
	// what rlab resolved (ExpandSelf). Command is the one-sided form's.
	ServerCommand, ClientCommand []string
	// Ready (tool program) is an RE2 expression the server's output
	// matches once it serves; "" waits for its port to listen (TCP or an
	// RDMA-CM ID).
	Ready string
	// Metrics (tools program and exec) are the numbers read from the
	// output, one `metric` block each.
	Metrics []OutputMetric

	// Needs (tool program) are the RDMA operations the program posts that
	// not every device kind does (Needs' names): refused on iWARP.
	Needs []string

	// Own are the options only the tool's family takes, by attribute name,
	// as its own toolopts.Option stored them (SetOwn); only its op reads
	// them. A new option of one family needs no field here.
	Own map[string]any
}

// SetOwn stores an option only the tool's family takes (Own).
func (o *Options) SetOwn(name string, v any) {
	if o.Own == nil {
		o.Own = map[string]any{}
	}
	o.Own[name] = v
}

// Source is a program block: a folder (or one file) beside the lab that
// rlab ships to each host once, by content hash, and builds there.
type Source struct {
	Name string
	// Dir is the folder on the controller the files are read from, and
	// Files the regular files under it (slash-separated, sorted), each
	// checked confined to it; a one-file source has one.
	Dir   string
	Files []SourceFile
	// Hash is the sha256 over the files' paths, modes and contents: the
	// cache key of the upload (and, with Build and the platform, of the
	// build).
	Hash  string
	Build []string // argv run in the uploaded copy; nil: nothing to build
	// Packages are the packages the build and the program need, by
	// distribution family (debian, rhel, suse).
	Packages map[string][]string
}

// SourceFile is one file of a Source.
type SourceFile struct {
	Path string // relative, slash-separated
	Size int64
	Mode uint32 // permission bits (an executable script stays one)
}

// selfMark brackets a self.* placeholder in an argv element: a NUL cannot
// be in an argv string the kernel passes, so no literal text is one.
const selfMark = "\x00"

// SelfAttrs are the self.* attributes a program command may use, each
// filled at run time: the server's address on the data netdev, a free port
// of the workload's block, the RDMA devices, the GID index, and the size
// and iterations of the run when the workload gives sizes or iterations.
var SelfAttrs = []string{"server_address", "port", "server_device", "client_device", "gid_index", "size", "iterations"}

// SelfRef is the placeholder self.NAME evaluates to while a lab loads.
func SelfRef(name string) string { return selfMark + "self." + name + selfMark }

// ExpandSelf fills the SelfRef placeholders of an argv from vals (by
// attribute name); a placeholder vals lacks is an error naming it.
func ExpandSelf(argv []string, vals map[string]string) ([]string, error) {
	out := make([]string, len(argv))
	for i, a := range argv {
		var b strings.Builder
		for _, t := range marked(a) {
			name, self := strings.CutPrefix(t.ref, "self.")
			switch {
			case t.broken:
				return nil, fmt.Errorf("argument %d: a broken self placeholder", i)
			case !t.mark || !self:
				b.WriteString(t.text)
			default:
				v, ok := vals[name]
				if !ok {
					return nil, fmt.Errorf("self.%s has no value in this run", name)
				}
				b.WriteString(v)
			}
		}
		out[i] = b.String()
	}
	return out, nil
}

// FillSelf fills the SelfRef placeholders of an argv that vals has a
// value for and leaves the others in place (the run refuses them:
// Fill). It reads each argument once, left to right (marked), so a lab's
// literal text between two references is never taken for one.
func FillSelf(argv []string, vals map[string]string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		var b strings.Builder
		for _, t := range marked(a) {
			name, self := strings.CutPrefix(t.ref, "self.")
			if v, ok := vals[name]; ok && self && t.mark {
				b.WriteString(v)
			} else {
				b.WriteString(t.text)
			}
		}
		out[i] = b.String()
	}
	return out
}

// ShowSelf prints an argv with its placeholders as the lab wrote them
// (${self.port}), for plans and messages.
func ShowSelf(argv []string) string { return strings.Join(ShowSelfArgv(argv), " ") }

// ShowSelfArgv is ShowSelf element by element (Show).
func ShowSelfArgv(argv []string) []string { return Show(argv) }

// piece is one piece of an argv element as marked reads it: literal text,
// or a placeholder (ref: its name between the two marks, "self.port",
// "server.gid"; text: the placeholder as written, marks and all). broken:
// a mark with no closing one, and the rest of the element after it (text).
type piece struct {
	text, ref string
	mark      bool // a placeholder (ref may be "": two marks together)
	broken    bool
}

// marked splits an argv element into text and placeholders, left to
// right: each mark opens a placeholder the next one closes. The one
// reader of the NUL format (Show, Fill, ExpandSelf, FillSelf).
func marked(a string) []piece {
	var ts []piece
	for a != "" {
		j := strings.Index(a, selfMark)
		if j < 0 {
			ts = append(ts, piece{text: a})
			break
		}
		if j > 0 {
			ts = append(ts, piece{text: a[:j]})
		}
		k := strings.Index(a[j+1:], selfMark)
		if k < 0 {
			ts = append(ts, piece{text: a[j:], broken: true})
			break
		}
		ts = append(ts, piece{text: a[j : j+1+k+1], ref: a[j+1 : j+1+k], mark: true})
		a = a[j+1+k+1:]
	}
	return ts
}

// SizeText prints a byte count (a size, bytes, memory) as a lab writes it:
// in the largest binary unit that divides it ("4KiB", "1GiB", "100B").
func SizeText(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
