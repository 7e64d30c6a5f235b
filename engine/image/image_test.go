package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/kinds"
)

func TestRecipeHash(t *testing.T) {
	base := DefaultRecipe("")
	if base.Release != DefaultRelease {
		t.Fatalf("default release %q", base.Release)
	}
	if got := base.Hash(); got != DefaultRecipe("bookworm").Hash() || len(got) != 16 {
		t.Fatalf("hash %q not stable", got)
	}
	// The full image's recipe is pinned: its cached build takes 12 minutes
	// (siw is compiled), and a variant must not rebuild it. Change this
	// only with a change to the full image itself.
	// 262ca4d19b9ac355: gcc (kinds/program.Compiler) and what the example
	// programs of labs/programs build with (issue 23: a lab's own programs
	// are built on the hosts).
	if got := base.Hash(); got != "262ca4d19b9ac355" {
		t.Errorf("the full image's hash changed to %s", got)
	}
	reordered := DefaultRecipe("")
	reordered.Packages[0], reordered.Packages[1] = reordered.Packages[1], reordered.Packages[0]
	if reordered.Hash() != base.Hash() {
		t.Error("package order changed the hash")
	}
	tests := []struct {
		name   string
		change func(r *Recipe)
	}{
		{"release", func(r *Recipe) { r.Release = "trixie" }},
		{"mirror", func(r *Recipe) { r.Mirror = "http://deb.example.org/debian" }},
		{"package added", func(r *Recipe) { r.Packages = append(r.Packages, "strace") }},
		{"size", func(r *Recipe) { r.SizeBytes *= 2 }},
		{"variant", func(r *Recipe) { r.Variant = VariantMinimal }},
		{"variant file", func(r *Recipe) { r.Files = append(r.Files, guestFile{"/etc/x", 0o644, "x"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := DefaultRecipe("")
			tt.change(&r)
			if r.Hash() == base.Hash() {
				t.Errorf("%s did not change the recipe hash", tt.name)
			}
			if !strings.HasPrefix(r.Name(), "debian-"+r.Release+"-") {
				t.Errorf("name %q", r.Name())
			}
		})
	}
}

// The image must not carry a host key and must hand sshd the one from fw_cfg.
func TestGuestFilesNoBakedKeys(t *testing.T) {
	for _, f := range guestFiles {
		if strings.Contains(f.content, "PRIVATE KEY") {
			t.Errorf("%s holds a private key", f.path)
		}
	}
	for _, want := range []string{FwHostKey, FwHostKeyPub, FwAuthorizedKeys, FwNetworkPrefix} {
		if !strings.Contains(fwcfgScript, want) {
			t.Errorf("fw_cfg script does not read %q", want)
		}
	}
	if !strings.Contains(fwcfgUnit, "Before=") || !strings.Contains(fwcfgUnit, "ssh.service") {
		t.Error("fw_cfg unit is not ordered before ssh.service")
	}
}

func TestParseDpkgStatus(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "dpkg-status"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := parseDpkgStatus(f, []string{"perftest", "rdma-core", "openssh-server", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"perftest": "4.5+0.17-1", "rdma-core": "44.0-2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}
}

func FuzzParseDpkgStatus(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "dpkg-status"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("Package: a\nStatus: install ok installed\nVersion: 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseDpkgStatus(strings.NewReader(s), []string{"a", "perftest"})
		if err != nil {
			return
		}
		for k, v := range m {
			if v == "" || (k != "a" && k != "perftest") {
				t.Fatalf("bad entry %q=%q", k, v)
			}
		}
	})
}

func TestLookupIncomplete(t *testing.T) {
	dir := t.TempDir()
	r := DefaultRecipe("")
	if _, err := Lookup(dir, r); err == nil {
		t.Fatal("found an image in an empty cache")
	}
	d := filepath.Join(dir, r.Name())
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, manifestName), []byte(`{"hash":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Lookup(dir, r); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("want incomplete error, got %v", err)
	}
	for _, n := range []string{rootName, kernelName, initrdName} {
		if err := os.WriteFile(filepath.Join(d, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	im, err := Lookup(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if !im.Cached || im.Root != filepath.Join(d, rootName) {
		t.Errorf("lookup: %+v", im)
	}
}

// TestImageShipsEveryTool: the image has the Debian package of every program
// of the tool descriptor.
func TestImageShipsEveryTool(t *testing.T) {
	have := map[string]bool{}
	for _, p := range DefaultPackages() {
		if have[p] {
			t.Errorf("package %s listed twice", p)
		}
		have[p] = true
	}
	for _, p := range kinds.Programs() {
		if !have[p.Packages.Debian] {
			t.Errorf("program %s: its package %s is not in the image", p.Name, p.Packages.Debian)
		}
	}
}

// TestRecipeFor: the names a lab's vm { image = NAME } and `rlab image build
// --image NAME` take, and the folder each image has in the cache.
func TestRecipeFor(t *testing.T) {
	for _, tc := range []struct {
		name, release, variant, folder string
	}{
		{"", "bookworm", "", "debian-bookworm-262ca4d19b9ac355"},
		{"bookworm", "bookworm", "", "debian-bookworm-262ca4d19b9ac355"},
		{"trixie", "trixie", "", "debian-trixie-"},
		{"minimal", "bookworm", "minimal", "debian-bookworm-minimal-"},
		{"bookworm-minimal", "bookworm", "minimal", "debian-bookworm-minimal-"},
		{"trixie-minimal", "trixie", "minimal", "debian-trixie-minimal-"},
	} {
		r := RecipeFor(tc.name)
		if r.Release != tc.release || r.Variant != tc.variant || !strings.HasPrefix(r.Name(), tc.folder) {
			t.Errorf("RecipeFor(%q): release %q variant %q folder %q; want %q %q %s...", tc.name, r.Release, r.Variant, r.Name(), tc.release, tc.variant, tc.folder)
		}
	}
	if RecipeFor("minimal").Hash() != RecipeFor("bookworm-minimal").Hash() {
		t.Error("minimal and bookworm-minimal are two images")
	}
}

// TestMinimalImage: the minimal image boots and logs in (kernel, systemd,
// sshd, sudo) and has no package of any program rlab runs, nor iproute2
// (the rdma tool), nor a siw build: provisioning installs them.
func TestMinimalImage(t *testing.T) {
	r := MinimalRecipe("")
	have := map[string]bool{}
	for _, p := range r.Packages {
		have[p] = true
	}
	for _, p := range []string{"linux-image-amd64", "systemd-sysv", "openssh-server", "sudo", "kmod"} {
		if !have[p] {
			t.Errorf("the minimal image lacks %s", p)
		}
	}
	for _, p := range kinds.Programs() {
		if have[p.Packages.Debian] && p.Packages.Debian != "kmod" {
			t.Errorf("the minimal image ships %s (package %s), which provisioning must install", p.Name, p.Packages.Debian)
		}
	}
	for _, p := range []string{"rdma-core", "ibverbs-providers", "iproute2", "tcpdump", "perftest"} {
		if have[p] {
			t.Errorf("the minimal image ships %s", p)
		}
	}
	if r.SIWSource != "" || len(r.siwBuildPackages()) != 0 {
		t.Errorf("the minimal image builds siw from %q", r.SIWSource)
	}
	if len(r.Files) != 1 || r.Files[0].path != "/etc/resolv.conf" || !strings.Contains(r.Files[0].content, "10.0.2.3") {
		t.Errorf("the minimal image does not resolve through slirp's DNS: %+v", r.Files)
	}
}

// TestImageBuildsPrograms: the full image carries a compiler and the verbs
// and RDMA-CM headers (labs/programs builds on the host), and the siw
// hook, which purges its own build tools, leaves make installed when the
// image asks for it; an image that does not ask still loses it.
func TestImageBuildsPrograms(t *testing.T) {
	r := DefaultRecipe("")
	have := map[string]bool{}
	for _, p := range r.Packages {
		have[p] = true
	}
	for _, p := range []string{"gcc", "make", "libc6-dev", "libibverbs-dev", "librdmacm-dev"} {
		if !have[p] {
			t.Errorf("the full image lacks %s", p)
		}
	}
	if got := r.siwPurge(); got != "" {
		t.Errorf("siw hook purges %q from an image that asks for make", got)
	}
	r.Packages = []string{"kmod"}
	if got := r.siwPurge(); got != "make" {
		t.Errorf("siw hook purges %q, want make, from an image that does not ask for it", got)
	}
	if !strings.Contains(siwHook, `$(dpkg-query -W -f="\${Package}\n" "linux-headers-*" "linux-kbuild-*" 2>/dev/null) $purge`) {
		t.Error("the siw hook no longer purges $purge")
	}
}
