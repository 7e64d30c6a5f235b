package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/zclconf/go-cty/cty"
)

// The program block: the lab author's own program, a folder (or one file)
// beside the lab that rlab ships to each host and builds there (tool
// program, kinds/program). Its source is confined as file() is: under the
// lab's folder, no "..", no symlink out, bounded in files and bytes.

// Bounds on a program's source: a tutorial's or a class's C files, not a
// repository's history.
const (
	MaxSourceFiles = 1000
	MaxSourceBytes = 16 << 20
)

// ProgramFamilies are the distribution families a program's packages name.
var ProgramFamilies = []string{"debian", "rhel", "suse"}

var programSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source", Required: true}, {Name: "build"}, {Name: "packages"}}}

func (l *loader) decodePrograms(blocks []*hcl.Block) {
	objs := map[string]cty.Value{}
	l.programByName = map[string]*kinds.Source{}
	for _, b := range blocks {
		name := b.Labels[0]
		if d := l.decls["program"][name]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, programSchema)
		sc := &scope{ctx: l.baseCtx(), where: "a program block"}
		content = l.unsetNulls(content, programSchema, sc.ctx)
		s := &kinds.Source{Name: name}
		if a := content.Attributes["source"]; a != nil {
			if p, ok := l.str(a, sc); ok {
				l.readSource(s, p, a.Expr.Range())
			}
		}
		if a := content.Attributes["build"]; a != nil {
			if argv, ok := l.strList(a, sc); ok {
				if len(argv) == 0 || argv[0] == "" {
					l.errorf(a.Expr.Range().Ptr(), "Empty build", `build is an argv list whose first element is the program, like ["make"] or ["gcc", "-o", "server", "server.c"]; leave it out when there is nothing to build.`)
				} else {
					s.Build = argv
				}
			}
		}
		if a := content.Attributes["packages"]; a != nil {
			s.Packages = l.programPackages(a, sc)
		}
		l.programByName[name] = s
		l.lab.Programs = append(l.lab.Programs, s)
		objs[name] = refObject("program", name, nil)
	}
	l.programObjs = objOrEmpty(objs)
}

// programPackages reads packages = { debian = [...], rhel = [...] }.
func (l *loader) programPackages(a *hcl.Attribute, sc *scope) map[string][]string {
	v, ok := l.value(a, sc)
	if !ok {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		l.errorf(a.Expr.Range().Ptr(), "Invalid packages", `packages maps a distribution family to package names, like { debian = ["gcc", "make"], rhel = ["gcc", "make"] }.`)
		return nil
	}
	out := map[string][]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		fam := k.AsString()
		if !slices.Contains(ProgramFamilies, fam) {
			l.errorf(a.Expr.Range().Ptr(), "Unknown distribution family", "packages names %q; the families are %s (Debian and Ubuntu, RHEL and Fedora, SUSE).%s", fam, toolopts.OrList(ProgramFamilies), didYouMean(fam, ProgramFamilies))
			continue
		}
		et := e.Type()
		if e.IsNull() || !(et.IsListType() || et.IsTupleType() || et.IsSetType()) {
			l.errorf(a.Expr.Range().Ptr(), "Invalid packages", "packages.%s is a list of package names.", fam)
			continue
		}
		for _, p := range e.AsValueSlice() {
			if p.IsNull() || p.Type() != cty.String || !packageNameRe.MatchString(p.AsString()) {
				l.errorf(a.Expr.Range().Ptr(), "Invalid package name", "packages.%s holds %s; a package name is letters, digits and . + _ - (no options, no spaces).", fam, p.GoString())
				continue
			}
			out[fam] = append(out[fam], p.AsString())
		}
	}
	return out
}

// readSource lists and hashes a program's source, confined to the lab's
// folder.
func (l *loader) readSource(s *kinds.Source, p string, rng hcl.Range) {
	bad := func(summary, detail string, args ...any) { l.errorf(rng.Ptr(), summary, detail, args...) }
	dir := l.lab.Dir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		bad("Cannot read program source", "%s.", err)
		return
	}
	rel := filepath.Clean(filepath.FromSlash(p))
	if p == "" || filepath.IsAbs(p) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		bad("Program source outside the lab", "source is a folder or file under the lab's folder %s, written relative to it, like \"tutorial\"; %q is not. Copy the program into the lab's folder.", abs, p)
		return
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		bad("Cannot read program source", "%s.", err)
		return
	}
	defer root.Close()
	st, err := root.Stat(rel)
	switch {
	case err != nil && strings.Contains(err.Error(), "escapes"):
		bad("Program source outside the lab", "%s leads out of the lab's folder %s through a symlink; copy the program into the lab's folder.", p, abs)
		return
	case err != nil:
		bad("Cannot read program source", "%s. source names a folder or file under the lab's folder %s.", err, abs)
		return
	}
	s.Dir = filepath.Join(abs, rel)
	var files []string
	if st.Mode().IsRegular() {
		s.Dir = filepath.Dir(s.Dir)
		files = []string{filepath.Base(rel)}
		rel = filepath.Dir(rel)
	} else if !st.IsDir() {
		bad("Invalid program source", "%s is neither a folder nor a regular file.", p)
		return
	}
	src, err := root.OpenRoot(rel)
	if err != nil {
		bad("Cannot read program source", "%s.", err)
		return
	}
	defer src.Close()
	if files == nil {
		err = fs.WalkDir(src.FS(), ".", func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			files = append(files, q)
			if len(files) > MaxSourceFiles {
				return fmt.Errorf("it holds more than %d files, the most a program source may have; build artefacts and .git belong elsewhere", MaxSourceFiles)
			}
			return nil
		})
		if err != nil {
			bad("Invalid program source", "%s: %s.", p, err)
			return
		}
	}
	sort.Strings(files)
	h := sha256.New()
	var total int64
	for _, f := range files {
		// Opened, then checked on the open file (non-blocking, so a FIFO
		// does not wait for a writer): a file checked by name and opened
		// after could be swapped for a FIFO in between and hang the load.
		fh, err := src.OpenFile(filepath.FromSlash(f), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			if strings.Contains(err.Error(), "escapes") {
				bad("Symlink out of the program source", "%s in %s is a symlink that leads out of the source folder; a program's files are shipped to the hosts, so each stays inside it. Copy the file in instead.", f, p)
			} else {
				bad("Invalid program source", "%s in %s: %s.", f, p, err)
			}
			return
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			bad("Invalid program source", "%s in %s: %s.", f, p, err)
			return
		}
		if !st.Mode().IsRegular() {
			fh.Close()
			bad("Invalid program source", "%s in %s is not a regular file (a symlink to a folder, a FIFO, a device); a program's source holds files and folders only.", f, p)
			return
		}
		total += st.Size()
		if total > MaxSourceBytes {
			fh.Close()
			bad("Program source too large", "%s holds more than %d bytes (%s), the most a program source may have; ship the sources, not build artefacts or data.", p, MaxSourceBytes, kinds.SizeText(MaxSourceBytes))
			return
		}
		mode := uint32(st.Mode().Perm())
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", f, mode, st.Size())
		_, err = io.Copy(h, io.LimitReader(fh, st.Size()))
		fh.Close()
		if err != nil {
			bad("Invalid program source", "%s in %s: %s.", f, p, err)
			return
		}
		s.Files = append(s.Files, kinds.SourceFile{Path: path.Clean(f), Size: st.Size(), Mode: mode})
	}
	if len(s.Files) == 0 {
		bad("Empty program source", "%s holds no files.", p)
		return
	}
	s.Hash = hex.EncodeToString(h.Sum(nil))
}

// packageNameRe is a package name as apt, dnf and zypper take one (the
// agent's provision checks the same).
var packageNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]*$`)
