package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// workDir is the agent's work dir, opened once (O_NOFOLLOW|O_DIRECTORY) and
// checked by the handle it holds, not by its path: a root agent working for
// a user (become, with SECURITY.md's sudoers rule) sits in a folder that
// user owns, so the user can rename it and put a symlink to /etc in its
// place at any moment. Every file the agent reads, lists or creates is
// reached through root, which is the folder that was checked; the processes
// it starts get it as their working directory through /proc/self/fd, never
// by its path. Swapping the path after the start changes nothing but
// check's answer.
type workDir struct {
	path     string   // absolute, as asked: for messages and the hello
	dir      *os.File // the folder itself
	root     *os.Root // the same folder, for the file operations
	dev, ino uint64
	// owner is the user a root agent works for (nil: the agent is the
	// user): files of the folder it opens must be that user's (usersFile).
	owner *Owner
	// as is the owner when the agent is root working for them (nil
	// otherwise, and for the capture's ring folder, root's): every file
	// operation on the user's behalf runs with their filesystem uid, gid
	// and groups (asUser), so the kernel judges each open as the user's
	// own, whatever the path leads to (issue 24).
	as     *Owner
	groups []int
	// made holds the files this agent created there (device and inode,
	// from the open file): the only root-owned files it gives to the
	// owner. "Root's with one name" was not enough: the user can rename a
	// root file of theirs (one root left in their home) into the work dir
	// between the agent's create and its chown.
	mu   sync.Mutex
	made map[[2]uint64]bool
}

// openWorkDir opens path, which must be a folder and not a symlink, and,
// with an owner, belong to that owner; it sets its mode to 0700 and its
// group to the owner's through the open handle.
func openWorkDir(path string, owner *Owner) (*workDir, error) {
	var fd int
	open := func() error {
		return ignoringEINTR(func() (err error) {
			fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			return err
		})
	}
	var err error
	var groups []int
	if owner != nil && owner.UID != 0 && os.Geteuid() == 0 {
		groups = ownerGroups(owner)
		// The path is resolved with the user's own search permissions:
		// the folder's owner alone does not say the user could reach it
		// (sudo's * matches "..", and a symlink of the user's may lead
		// through a folder of root's), and root would open theirs behind
		// a folder they cannot search (attack round 15).
		err = asOwnerFS(owner, groups, fmt.Sprintf("open work dir %q", path), open)
		if errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("open work dir %q as uid %d: %w: a root agent working for a user takes only a folder that user can reach", path, owner.UID, err)
		}
	} else {
		err = open()
	}
	if err != nil {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil, fmt.Errorf("work dir %q is a symlink: refusing to follow it", path)
		}
		return nil, fmt.Errorf("open work dir %q: %w", path, err)
	}
	dir := os.NewFile(uintptr(fd), path)
	w := &workDir{path: path, dir: dir, owner: owner}
	if groups != nil {
		w.as, w.groups = owner, groups
	}
	fail := func(err error) (*workDir, error) {
		w.close()
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(fmt.Errorf("stat work dir %q: %w", path, err))
	}
	if owner != nil && int(st.Uid) != owner.UID {
		return fail(fmt.Errorf("the work dir %q opened belongs to uid %d, not to the owner uid %d: refusing to take it over for the owner", path, st.Uid, owner.UID))
	}
	if owner != nil {
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(fd, &sfs); err != nil {
			return fail(fmt.Errorf("statfs work dir %q: %w", path, err))
		}
		if name, bad := kernelFS[int64(sfs.Type)]; bad {
			return fail(fmt.Errorf("the work dir %q is on a %s filesystem: a root agent working for a user takes no folder of the kernel's, where its writes are requests the kernel grants by the writer's credentials (a cgroup's cgroup.procs moves any process)", path, name))
		}
		if err := inOwnMountNS(fd); err != nil {
			return fail(fmt.Errorf("the work dir %q: %w", path, err))
		}
	}
	// Mkdir honours umask; the work dir must be exactly 0700.
	if st.Mode&0o7777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fail(fmt.Errorf("chmod work dir %q: %w", path, err))
		}
	}
	if owner != nil && int(st.Gid) != owner.GID {
		if err := unix.Fchown(fd, owner.UID, owner.GID); err != nil {
			return fail(fmt.Errorf("chown work dir %q to %d:%d: %w", path, owner.UID, owner.GID, err))
		}
	}
	w.dev, w.ino = uint64(st.Dev), st.Ino
	// os.Root has no constructor from a descriptor; /proc/self/fd/N is the
	// folder this descriptor holds, whatever its path now names.
	if w.root, err = os.OpenRoot(w.fdPath()); err != nil {
		return fail(fmt.Errorf("open work dir %q: %w", path, err))
	}
	fi, err := w.root.Stat(".")
	if err != nil {
		return fail(fmt.Errorf("stat work dir %q: %w", path, err))
	}
	if rs, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(rs.Dev) != w.dev || rs.Ino != w.ino {
		return fail(fmt.Errorf("open work dir %q: /proc/self/fd/%d is not the folder opened (no /proc?)", path, fd))
	}
	return w, nil
}

// inOwnMountNS refuses a work dir, by its open descriptor, whose mount is
// not one of this agent's mount namespace: a path through a magic link
// (/proc/PID/root of the user's process) leads into a mount namespace of
// the user's own (an unprivileged user namespace), where they mount what
// they like inside the work dir at any time (/proc bound there), and
// os.Root crosses mounts. Root's writes there, as the user's filesystem
// uid but with root's other capabilities, are kernel requests: a user
// namespace's uid_map took "0 0 4294967295" and the user became uid 0 of
// the host (attack round 17). In the agent's own namespace the user
// mounts nothing but FUSE, which root is not let into. Mount ids are
// unique across namespaces: one not in /proc/self/mountinfo is another's.
func inOwnMountNS(fd int) error {
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return fmt.Errorf("read its mount id: %w", err)
	}
	var id string
	for _, l := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(l, "mnt_id:"); ok {
			id = strings.TrimSpace(v)
		}
	}
	if id == "" {
		return errors.New("read its mount id: no mnt_id in fdinfo")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read the agent's mounts: %w", err)
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		if f, _, _ := strings.Cut(l, " "); f == id {
			return nil
		}
	}
	return fmt.Errorf("its mount (id %s) is not in the agent's mount namespace (reached through a /proc/PID/root of another namespace?): a root agent working for a user takes only a folder of its own namespace, where the user cannot mount under it", id)
}

// kernelFS are the filesystems, by statfs magic, whose files are requests
// to the kernel rather than data: a user owns folders there (systemd
// delegates user@UID.service's cgroup to its user; /proc/PID is the
// process owner's), and a root agent's write to a file the user owns there
// is checked by the kernel as root's: cgroup.procs moved any process into
// the user's cgroup, to be frozen or killed (attack round 16). A work dir
// is a folder of files; none of these is one.
var kernelFS = map[int64]string{
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.BPF_FS_MAGIC:        "bpf",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.SMACK_MAGIC:         "smackfs",
	0x62656570:               "configfs", // CONFIGFS_MAGIC, not in x/sys
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	0x65735543:               "fusectl", // FUSE_CTL_SUPER_MAGIC, not in x/sys
	unix.NSFS_MAGIC:          "nsfs",
}

// fdPath names the held folder for a path-taking interface (the working
// directory of a child: Go changes to it in the child before exec, while
// the descriptor is still open there).
func (w *workDir) fdPath() string {
	return "/proc/self/fd/" + strconv.Itoa(int(w.dir.Fd()))
}

func (w *workDir) close() {
	if w == nil {
		return
	}
	if w.root != nil {
		w.root.Close()
	}
	w.dir.Close()
}

// check reports, as an error for the caller, whether the work dir's path
// still names the folder the agent opened. Nothing the agent does follows
// the path; this is only so a replaced work dir is said, not silently
// worked around.
func (w *workDir) check(method string) error {
	var st unix.Stat_t
	err := unix.Lstat(w.path, &st)
	if err == nil && uint64(st.Dev) == w.dev && st.Ino == w.ino {
		return nil
	}
	now := "gone"
	switch {
	case err != nil:
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		now = "a symlink"
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		now = "another folder"
	default:
		now = "not a folder"
	}
	return perr(proto.CodePermission, "%s: the work dir %q was replaced after the agent opened it (it is now %s): refusing to follow it", method, w.path, now)
}

// asUser runs f, which works on the user's files through w, with the
// user's filesystem uid, gid and groups when the agent is root working for
// them (w.as): what f opens, makes, lists or removes, the kernel allows as
// it would the user, so a path the user points somewhere they cannot go
// (a symlink, a hard link, a file of a delegated cgroup whose write is
// judged by credentials) is refused them. f must do its file work in the
// calling goroutine (os.Root's calls do); its error is returned as is.
func (w *workDir) asUser(what string, f func() error) error {
	if w == nil || w.as == nil {
		return f()
	}
	return asOwnerFS(w.as, w.groups, what, f)
}

// create creates a new 0600 file in the work dir, owned by owner when set;
// a symlink is followed only inside the work dir. An existing file of that
// name is removed first, never opened: it may be a hard link the user put
// there to a file that is not theirs (usersFile), which root would
// truncate and chown for them.
//
// With w.as (root working for the user) it is made as the user, theirs
// from its first instant: no chown. Without (the capture's ring folder,
// root's), root makes it and chowns it.
func (w *workDir) create(name string, owner *Owner) (*os.File, error) {
	var f *os.File
	err := w.asUser(fmt.Sprintf("create %q", name), func() (err error) {
		f, err = w.createNew(name, 0o600)
		return err
	})
	if err != nil {
		return nil, err
	}
	if owner != nil && w.as == nil {
		if err := f.Chown(owner.UID, owner.GID); err != nil {
			f.Close()
			return nil, fmt.Errorf("chown %q to %d:%d: %w", name, owner.UID, owner.GID, err)
		}
		w.forget(f)
	}
	return f, nil
}

// createNew creates name O_EXCL, removing a file (a name, not what it
// links to) in its place first; a second one put there in between fails.
func (w *workDir) createNew(name string, mode fs.FileMode) (*os.File, error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL | syscall.O_NOFOLLOW
	f, err := w.root.OpenFile(name, flags, mode)
	if errors.Is(err, fs.ErrExist) {
		if rerr := w.root.Remove(name); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			f, err = w.root.OpenFile(name, flags, mode)
		}
	}
	if err != nil {
		return nil, rootErr(err)
	}
	// Only root's own files are recorded (agentMade): one made as the
	// user (asUser) is theirs, and its inode, once they remove it, may be
	// a file of root's next.
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
			w.mu.Lock()
			if w.made == nil {
				w.made = map[[2]uint64]bool{}
			}
			w.made[[2]uint64{uint64(st.Dev), st.Ino}] = true
			w.mu.Unlock()
		}
	}
	return f, nil
}

// forget drops the open file fi, just given to the user, from the files
// this agent made: from then on it is the user's by its owner, and the
// user may remove it, after which a new file of root's (a capture's
// record, another run's output) may get its inode number and would pass
// for one the agent made (attack round 15: appended to and given to the
// user, 2 tries of 2).
func (w *workDir) forget(f *os.File) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		w.mu.Lock()
		delete(w.made, [2]uint64{uint64(st.Dev), st.Ino})
		w.mu.Unlock()
	}
}

// agentMade says whether the open file fi is one this agent created in the
// work dir and root's still, with no other name.
func (w *workDir) agentMade(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || st.Nlink != 1 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.made[[2]uint64{uint64(st.Dev), st.Ino}]
}

// ownMadeDir gives folder name, just made by the agent, to owner through
// the open folder: by name, the user could put something else there
// between the mkdir and the chown (a hard link to a file of root's).
func (w *workDir) ownMadeDir(name string, owner *Owner) error {
	f, err := w.root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return rootErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok || !fi.IsDir():
		return fmt.Errorf("%q is not a folder", name)
	case int(st.Uid) == owner.UID:
		return nil // the user's already (one they put in its place)
	case st.Uid != 0:
		return usersFile(fi, owner, name)
	}
	return f.Chown(owner.UID, owner.GID)
}

// own gives a file of the work dir to owner, when set, and makes it 0600,
// through the open file: only a file that is the user's already (tcpdump
// writes as the user) or one the agent made, root's with no other name
// (agentMade).
func (w *workDir) own(name string, owner *Owner) error {
	f, err := w.root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return rootErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q is not a regular file", name)
	}
	if owner != nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !(int(st.Uid) == owner.UID || w.agentMade(fi)) {
			return usersFile(fi, owner, name)
		}
	}
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if owner == nil {
		return nil
	}
	if err := f.Chown(owner.UID, owner.GID); err != nil {
		return fmt.Errorf("chown %q to %d:%d: %w", name, owner.UID, owner.GID, err)
	}
	w.forget(f)
	return nil
}

// usersFile refuses, for a root agent working for a user (owner set), an
// open file of the work dir that is not that user's own. The user may put
// a hard link there to a file they do not own (to any file where
// fs.protected_hardlinks is 0, the kernel's default; to one they can read
// and write where it is 1): O_NOFOLLOW and os.Root stop symlinks, not hard
// links. The open file's own inode decides (fstat), so no rename in
// between changes the answer. A file the user owns is theirs to read and
// change whatever its links.
func usersFile(fi fs.FileInfo, owner *Owner, name string) error {
	if owner == nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%q: no owner to check", name)
	}
	if int(st.Uid) != owner.UID {
		return fmt.Errorf("%q belongs to uid %d, not to the user %d the agent works for (a hard link to another's file?): %w", name, st.Uid, owner.UID, errNotUsers)
	}
	return nil
}

var errNotUsers = errors.New("refusing to touch it as root")

// readTail returns the last max bytes of a file of the work dir and
// whether it was longer.
func (w *workDir) readTail(name string, max int64) (string, bool) {
	// O_NONBLOCK: a FIFO put in a file's place must not hang the agent.
	var f *os.File
	err := w.asUser(fmt.Sprintf("read %q", name), func() (err error) {
		f, err = w.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || usersFile(fi, w.owner, name) != nil {
		return "", false
	}
	trunc := false
	if fi.Size() > max {
		trunc = true
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return "", false
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return strings.ToValidUTF8(string(b), "\uFFFD"), trunc
}

// size is a file's size in the work dir, 0 when it has none.
func (w *workDir) size(name string) int64 {
	var fi fs.FileInfo
	err := w.asUser(fmt.Sprintf("stat %q", name), func() (err error) { fi, err = w.root.Lstat(name); return err })
	if err != nil {
		return 0
	}
	return fi.Size()
}

// statfs is the work dir's filesystem, by the held handle.
func (w *workDir) statfs(st *unix.Statfs_t) error {
	return unix.Fstatfs(int(w.dir.Fd()), st)
}

// workDir is the current work dir (a lease replaces it).
func (s *Server) workDir() *workDir {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wd
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
