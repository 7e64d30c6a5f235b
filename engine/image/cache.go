package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cached is one folder of the image cache, as `rlab image list` shows it.
type Cached struct {
	Name  string
	Dir   string
	Image *Image    // nil when the folder holds no complete image
	Bytes int64     // disk space the folder takes (allocated)
	Built time.Time // when it was built (image.json), else the folder's time
	// Current: this rlab builds and boots this image for its release and
	// variant (its recipe hash is today's). An image of an older recipe is
	// never booted again: a lab of this version would build a new one.
	Current bool
	// InUse: a process (a running VM's qemu, a build) has a file of it open.
	InUse bool
	// Foreign: not a folder rlab makes (its name is no image's nor a
	// build's); prune leaves it.
	Foreign bool
	Why     string // why it is not current ("" when it is)
}

// List returns the folders of the cache dir, images first by name, then
// what is left of builds. A missing dir is an empty cache.
func List(dir string) ([]Cached, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list image cache %s: %w", dir, err)
	}
	open := openFiles()
	var out []Cached
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		c := Cached{Name: e.Name(), Dir: filepath.Join(dir, e.Name())}
		c.Bytes, c.Built = du(c.Dir)
		c.InUse = inUse(open, c.Dir)
		if pid, ok := buildPID(c.Name); ok {
			// A build's work folder: busy while its builder lives.
			c.Why = "left by a build that did not finish"
			if processAlive(pid) {
				c.InUse, c.Why = true, "a build in progress"
			}
			out = append(out, c)
			continue
		}
		r, ok := recipeOfName(c.Name)
		switch {
		case !ok:
			c.Why, c.Foreign = "not an image folder rlab names", true
		default:
			if im, err := Lookup(dir, r); err == nil {
				c.Image, c.Built = im, im.BuiltAt
			}
			switch {
			case r.Name() != c.Name:
				c.Why = "built from an older recipe (this rlab builds " + r.Name() + ")"
			case c.Image == nil:
				c.Why = "incomplete"
			default:
				c.Current = true
			}
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Image != nil) != (out[j].Image != nil) {
			return out[i].Image != nil
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Prunable reports whether prune removes c: never what is in use; with
// all, every other folder; otherwise what this rlab would not boot (an
// older recipe, an incomplete image, what a failed build left).
// A folder rlab does not name (a cache pointed at a folder holding other
// things) is never removed.
func (c Cached) Prunable(all bool) bool {
	return !c.InUse && !c.Foreign && (all || !c.Current)
}

// Prune removes the prunable folders of the cache dir (see Prunable) and
// returns them; with dryRun it only returns them.
func Prune(dir string, all, dryRun bool) ([]Cached, error) {
	if err := CheckCacheDir(dir); err != nil {
		return nil, err
	}
	list, err := List(dir)
	if err != nil {
		return nil, err
	}
	var gone []Cached
	var errs []error
	for _, c := range list {
		if !c.Prunable(all) {
			continue
		}
		if !dryRun {
			if err := remove(dir, c); err != nil {
				errs = append(errs, fmt.Errorf("prune image %s: %w", c.Name, err))
				continue
			}
		}
		gone = append(gone, c)
	}
	return gone, errors.Join(errs...)
}

// remove removes c's folder and, for an image, its build lock, holding
// that lock (lockFile): a build of it (Ensure) holds the lock until it is
// done and is left to finish, and the lock file is unlinked only by its
// holder, so a builder that opened it just before cannot go on to lock the
// unlinked file while the next builder locks a new one (SECURITY 192).
func remove(dir string, c Cached) error {
	if _, build := buildPID(c.Name); build {
		return os.RemoveAll(c.Dir)
	}
	path := filepath.Join(dir, "."+c.Name+".lock")
	lock, err := lockFile(context.Background(), path, false)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("a build of it is running: left as it is")
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer lock.Close()
	if err := os.RemoveAll(c.Dir); err != nil {
		return err
	}
	return os.Remove(path)
}

// recipeOfName is the recipe this rlab builds for a cache folder's
// release and variant: debian-<release>-[minimal-]<hash>.
func recipeOfName(name string) (Recipe, bool) {
	rest, ok := strings.CutPrefix(name, "debian-")
	if !ok {
		return Recipe{}, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || len(rest)-i-1 != 16 {
		return Recipe{}, false
	}
	return RecipeFor(rest[:i]), true
}

// buildPID is the pid in a build's work folder name (.build-<name>-<pid>).
func buildPID(name string) (int, bool) {
	if !strings.HasPrefix(name, ".build-") {
		return 0, false
	}
	pid, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// du is the allocated size of the files under dir and its newest time.
func du(dir string) (int64, time.Time) {
	var n int64
	var t time.Time
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += allocated(info)
			if info.ModTime().After(t) {
				t = info.ModTime()
			}
		}
		return nil
	})
	return n, t
}

// openFiles lists the files processes have open (/proc/*/fd), as far as
// this user may see them: qemu holds a VM's image open (the backing file
// of its overlay) for as long as it runs.
func openFiles() []string {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var out []string
	for _, fd := range fds {
		if p, err := os.Readlink(fd); err == nil && strings.HasPrefix(p, "/") {
			out = append(out, p)
		}
	}
	return out
}

// InUse reports whether a process (a running VM's qemu, a build) has a file
// under dir open: what List marks InUse, for one folder.
func InUse(dir string) bool { return inUse(openFiles(), dir) }

func inUse(open []string, dir string) bool {
	for _, p := range open {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// allocated is the disk space a file takes (sparse files: its blocks).
func allocated(info fs.FileInfo) int64 {
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		return sys.Blocks * 512
	}
	return info.Size()
}
