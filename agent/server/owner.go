package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hasDotDot says whether path has a ".." element. Look before
// filepath.Abs or Join, which clean it away: sudo's * matches it.
func hasDotDot(path string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "..")
}

// mkdirAllOwned is os.MkdirAll(dir, 0700) that also chowns every directory
// it creates to owner, so a root agent working for a user leaves nothing the
// user cannot read or delete.
//
// With an owner (a root agent working for a user) it refuses what the user
// could not do alone: a path with ".." in it, an existing work dir the owner
// does not own, or creating directories under one the owner does not own
// (say a symlinked ~/.cache pointing into /etc). Otherwise a sudoers rule for
// the agent would let a user take over any folder.
func mkdirAllOwned(dir string, owner *Owner) error {
	if owner != nil && hasDotDot(dir) {
		return fmt.Errorf("work dir %q: refusing a path with \"..\" in it", dir)
	}
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if owner != nil {
				st, ok := fi.Sys().(*syscall.Stat_t)
				if !ok || !fi.IsDir() || int(st.Uid) != owner.UID {
					what := "an existing work dir"
					if len(created) > 0 {
						what = "the folder the work dir would be made in"
					}
					uid := -1
					if ok {
						uid = int(st.Uid)
					}
					return fmt.Errorf("%s %q belongs to uid %d, not to the owner uid %d: refusing to take it over for the owner", what, d, uid, owner.UID)
				}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	// Outermost first. With an owner each folder is made as the owner (its
	// filesystem uid and gid), so it is the owner's from its first instant:
	// an agent of the owner's sharing the home (NFS) never finds a folder
	// of root's it cannot write in.
	for i := len(created) - 1; i >= 0; i-- {
		d := created[i]
		var err error
		if owner != nil {
			err = mkdirAs(d, owner)
		} else {
			err = os.Mkdir(d, 0o700)
		}
		if errors.Is(err, fs.ErrExist) {
			// Made meanwhile (an agent for another host sharing the home).
			fi, serr := os.Lstat(d)
			if serr != nil || !fi.IsDir() {
				return fmt.Errorf("create %q: made meanwhile, and not a folder", d)
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); owner != nil && (!ok || int(st.Uid) != owner.UID) {
				return fmt.Errorf("create %q: made meanwhile by another uid than the owner's %d: refusing it", d, owner.UID)
			}
			err = nil
		}
		if err != nil {
			return err
		}
	}
	// Its mode and group are set by openWorkDir, through the handle it
	// checks: by path, a user could have swapped it for a symlink since.
	return nil
}

// mkdirAs makes folder d (0700) with the owner's filesystem uid and gid:
// the folder is the owner's as it is made, and the owner's own permissions
// decide whether it can be.
func mkdirAs(d string, owner *Owner) error {
	return asOwnerFS(owner, ownerGroups(owner), fmt.Sprintf("create %q", d), func() error { return os.Mkdir(d, 0o700) })
}

// asOwnerFS runs f with the owner's filesystem uid and gid (setfsuid and
// setfsgid apply to this thread only, so it is locked for the while), and
// none of root's capabilities in effect on the thread (dropEffectiveCaps):
// what f does to files, the owner's permissions decide. With groups, the
// thread's supplementary groups are those (the raw setgroups is the
// thread's too) instead of root's, whose group 0 would open folders of
// group root to f. what names it in errors.
func asOwnerFS(owner *Owner, groups []int, what string, f func() error) error {
	runtime.LockOSThread()
	var was []int
	if groups != nil {
		var err error
		if was, err = unix.Getgroups(); err == nil {
			err = unix.Setgroups(groups)
		}
		if err != nil {
			unix.Setgroups(was)
			runtime.UnlockOSThread()
			return fmt.Errorf("%s as uid %d: set its groups: %w", what, owner.UID, err)
		}
	}
	gid, _ := unix.SetfsgidRetGid(owner.GID)
	uid, _ := unix.SetfsuidRetUid(owner.UID)
	now, _ := unix.SetfsuidRetUid(-1)
	caps, cerr := dropEffectiveCaps()
	var err error
	switch {
	case now != owner.UID:
		err = fmt.Errorf("%s as uid %d: setfsuid did not take", what, owner.UID)
	case cerr != nil:
		err = fmt.Errorf("%s as uid %d: drop root's capabilities: %w", what, owner.UID, cerr)
	default:
		err = f()
	}
	if caps != nil && unix.Capset(&caps.hdr, &caps.data[0]) != nil {
		// Locked, as below: a thread without root's capabilities is
		// not one to run other goroutines on.
		return fmt.Errorf("%s: could not restore the agent's capabilities", what)
	}
	unix.SetfsuidRetUid(uid)
	unix.SetfsgidRetGid(gid)
	if back, _ := unix.SetfsuidRetUid(-1); back != uid {
		// Leave the thread locked: Go ends it with this goroutine rather
		// than run others with the owner's file permissions.
		return fmt.Errorf("%s: could not restore the filesystem uid %d", what, uid)
	}
	if groups != nil && unix.Setgroups(was) != nil {
		return fmt.Errorf("%s: could not restore the groups", what) // locked, as above
	}
	runtime.UnlockOSThread()
	return err
}

// threadCaps is a thread's capability sets as capget gave them.
type threadCaps struct {
	hdr  unix.CapUserHeader
	data [2]unix.CapUserData
}

// dropEffectiveCaps clears this thread's effective capabilities (capset
// with pid 0 is the calling thread's), keeping the permitted set so they
// can be raised again, and returns what they were. A filesystem uid other
// than the root's drops only the file capabilities (DAC, FOWNER, ...);
// the kernel judges some writes by the opener's other capabilities: a
// user namespace's uid_map by CAP_SETUID (attack round 17, host side: as
// the user, files.write set one to "0 0 4294967295" and the user became
// the host's root), cgroup and fusectl files by CAP_SYS_ADMIN. With none
// in effect, what the agent opens for the user is judged as the user's.
func dropEffectiveCaps() (*threadCaps, error) {
	c := &threadCaps{hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}}
	if err := unix.Capget(&c.hdr, &c.data[0]); err != nil {
		return nil, err
	}
	none := *c
	none.data[0].Effective, none.data[1].Effective = 0, 0
	if err := unix.Capset(&none.hdr, &none.data[0]); err != nil {
		return nil, err
	}
	return c, nil
}

// ownerGroups are the groups the owner's file access goes by (asOwnerFS):
// its gid and the groups the user database gives it, never root's.
func ownerGroups(o *Owner) []int {
	gs := []int{o.GID}
	if u, err := user.LookupId(strconv.Itoa(o.UID)); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil && n != o.GID {
					gs = append(gs, n)
				}
			}
		}
	}
	return gs
}

// lookOwnerTool finds the program name of one of the owner's workloads as
// the owner would: in the owner's PATH (workloadPATH), then in
// extraToolDirs, as lookTool does, each candidate looked at with the
// owner's filesystem uid (asOwnerFS), so root neither finds a program the
// owner could not run nor says what a folder the owner cannot search holds.
func lookOwnerTool(name string, owner *Owner, groups []uint32) (string, error) {
	dirs := append(filepath.SplitList(workloadPATH()), extraToolDirs...)
	gs := []int{owner.GID}
	for _, g := range groups {
		gs = append(gs, int(g))
	}
	found := ""
	err := asOwnerFS(owner, gs, fmt.Sprintf("find %q", name), func() error {
		for _, d := range dirs {
			if !filepath.IsAbs(d) {
				continue // relative to the agent's folder, not the user's
			}
			p := filepath.Join(d, name)
			var st unix.Stat_t
			if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) == nil {
				found = p
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", fmt.Errorf("%s not found in the owner's PATH (%s) or %s", name, workloadPATH(), strings.Join(extraToolDirs, ":"))
	}
	return found, nil
}

// withPATH is env with its PATH set to path.
func withPATH(env []string, path string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, "PATH=") {
			out = append(out, e)
		}
	}
	return append(out, "PATH="+path)
}

// dropsToOwner reports whether workloads run as the owner, not as the
// agent: it is root working for a user (--owner).
func (s *Server) dropsToOwner() bool {
	return s.opts.Owner != nil && os.Geteuid() == 0 && s.opts.Owner.UID != 0
}

// ownerCredential is the credential workloads run with when the agent is root
// working for a user (--owner): that user's uid, gid and groups. It returns
// nil when there is nothing to drop (no owner, or not root).
// ownerLoginEnv is the owner's USER, LOGNAME and SHELL, as a login over
// ssh and `sudo -u` give them: a root agent working for a user keeps none
// of the environment sudo gave it (PinRootPATH), and a workload's script
// using $USER got nothing (under set -u, an exit). None when the user
// database does not know the uid.
func ownerLoginEnv(uid int) []string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Username == "" {
		return nil
	}
	return []string{"USER=" + u.Username, "LOGNAME=" + u.Username, "SHELL=" + loginShell(passwdFile, u.Username)}
}

// passwdFile is where loginShell reads; tests point it elsewhere.
var passwdFile = "/etc/passwd"

// loginShell is name's shell in the passwd file (its first 4 MiB), or
// /bin/sh when it names none (a user from another database, or an empty
// field, which login(1) also takes as /bin/sh).
func loginShell(passwd, name string) string {
	f, err := os.Open(passwd)
	if err != nil {
		return "/bin/sh"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4<<20))
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) == 7 && fields[0] == name {
			if sh := strings.TrimSpace(fields[6]); filepath.IsAbs(sh) {
				return sh
			}
			break
		}
	}
	return "/bin/sh"
}

func (s *Server) ownerCredential() (*syscall.Credential, string, error) {
	if !s.dropsToOwner() {
		return nil, "", nil
	}
	o := s.opts.Owner
	cred := &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID)}
	home := "/"
	if u, err := user.LookupId(strconv.Itoa(o.UID)); err == nil {
		home = u.HomeDir
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
	}
	return cred, home, nil
}
