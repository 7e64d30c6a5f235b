package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// optionProofs maps every documented lab attribute and command flag to the
// test that proves it does what the docs say, as "<package dir>.<TestName>".
// TestDocumentedOptionsProven fails when labs/README.md, README.md or a
// command's --help documents an option missing here, when an entry names a
// test that does not exist, or when an entry is for an option no longer
// documented. A new option needs its proving test and its line here.
//
// Keys: "BLOCK.ATTR" (nested blocks dotted: "host.vm.network.mtu") for
// labs/README.md's "Blocks" section; "CMD --flag" ("image build --force")
// for flags; shared flag sets (hostFlags, varFlags) are proven once on one
// command and named for each command that has them.
var optionProofs = map[string]string{
	// labs/README.md, "Blocks": siw and rdma (issue 16)
	"siw.host":      "engine/run.TestRunSIWAndFoundDevice", // created with type siw on its netdev, deleted after
	"siw.netdev":    "engine/run.TestRunSIWAndFoundDevice",
	"siw.name":      "engine/run.TestRunSIWAndFoundDevice", // iw_keep
	"siw.keep":      "engine/run.TestRunSIWAndFoundDevice", // iw_keep left
	"siw.count":     "engine/lab.TestDeviceBlocksRepeat",
	"siw.for_each":  "engine/lab.TestDeviceBlocksRepeat",
	"rdma.host":     "engine/run.TestRunSIWAndFoundDevice", // used, journaled as found, never deleted (also by down)
	"rdma.device":   "engine/run.TestRunFoundDeviceMissing",
	"rdma.port":     "engine/run.TestRunSIWAndFoundDevice", // rdma.use with port 2
	"rdma.count":    "engine/lab.TestDeviceBlocksRepeat",
	"rdma.for_each": "engine/lab.TestDeviceBlocks",
	// labs/README.md, "Blocks"
	"lab.description":                   "engine/lab.TestExpansion",       // into the model; summary.md shows it (engine/results)
	"variable.type":                     "engine/lab.TestTypedVars",       // values converted and checked against the type
	"variable.default":                  "engine/lab.TestVariableSources", // default < RLAB_VAR_ < -var-file < -var
	"variable.description":              "engine/lab.TestValidLabs",       // accepted; documentation only (the examples use it)
	"variable.sensitive":                "engine/run.TestRunRedactsSensitive",
	"variable.validation":               "engine/lab.TestErrorCorpus", // testdata/labs/errors/variable_validation.hcl
	"variable.validation.condition":     "engine/lab.TestErrorCorpus",
	"variable.validation.error_message": "engine/lab.TestErrorCorpus",
	"ssh.user":                          "cmd/rlab.TestHostFlagsNetns", // the login user from the ssh block (var.user)
	"ssh.port":                          "engine/run.TestRunOverSSH",
	"ssh.identity_file":                 "cmd/rlab.TestRunCmdNetns",
	"ssh.known_hosts":                   "cmd/rlab.TestFactsHostKeysNetns",
	"ssh.jump":                          "cmd/rlab.TestClassNetns", // every student host through the bastion
	"ssh.become":                        "engine/sectest.TestBecomeOnlyWhereNeeded",
	"host.address":                      "engine/run.TestNetnsRun",
	"host.port":                         "engine/run.TestRunOverSSH",
	"host.user":                         "engine/run.TestNetnsRun",
	"host.identity_file":                "engine/run.TestNetnsRun",
	"host.known_hosts":                  "engine/run.TestNetnsRun",
	"host.jump":                         "cmd/rlab.TestFactsJumpChainNetns",
	"host.become":                       "engine/run.TestNetnsRun",      // tcpdump as the sudo user with become
	"host.ssh":                          "engine/lab.TestNullIsUnset",   // nested ssh settings per host
	"host.count":                        "cmd/rlab.TestExampleNetnsLab", // labs/netns-tcp.hcl: host "h" { count = 2 }
	"host.for_each":                     "cmd/rlab.TestClassNetns",
	"host.vm":                           "engine/vm.TestE2ERlabRun",
	"host.vm.image":                     "engine/run.TestLocalVMsAttrs",
	"host.vm.internet":                  "engine/vm.TestE2EProvision", // the registry reached through the NAT; restrict=on lifted for that VM only: engine/run TestLocalVMsMinimalInternet
	"host.vm.memory":                    "engine/run.TestLocalVMsAttrs",
	"host.vm.cpus":                      "engine/run.TestLocalVMsAttrs",
	"host.vm.boot_timeout":              "engine/run.TestLocalVMsAttrs",
	"host.vm.network":                   "engine/vm.TestE2ERlabRun",         // eth1 with its address, linked between the VMs; three on one network: TestE2ERing, the switch: TestHub
	"host.vm.network.address":           "engine/vm.TestE2ERealRXE",         // the guest's eth1 has it (checked over SSH)
	"host.vm.network.mtu":               "engine/vm.TestE2ERing",            // 8972-byte DF pings pass at mtu 9000, RoCE MTU 4096; the guest file: TestNetworkFileGolden
	"host.vm.network.name":              "engine/vm.TestClassPairsOwnLinks", // each student's pair on its own link, no VM wired to another pair; frames on the real sockets stay in the pair: TestClassPairsFramesStayInPair; booted: TestE2EClassVMs
	"rxe.host":                          "engine/run.TestRunRXENameAndKeep",
	"rxe.netdev":                        "engine/run.TestRunRXENameAndKeep",
	"rxe.name":                          "engine/run.TestRunRXENameAndKeep",
	"rxe.keep":                          "engine/run.TestRunRXENameAndKeep",
	"rxe.count":                         "engine/lab.TestExpansion",
	"rxe.for_each":                      "engine/run.TestValidateReusesRXE",
	"capture.host":                      "engine/run.TestRunCaptures",
	"capture.netdev":                    "engine/run.TestRunCaptures", // lo and "any"
	"capture.filter":                    "engine/run.TestRunCaptures",
	"capture.snaplen":                   "engine/run.TestRunCaptures",
	"capture.max_size":                  "engine/run.TestRunCaptures",
	"capture.during":                    "engine/run.TestRunCaptures",
	"capture.count":                     "engine/run.TestRunCaptures",
	"capture.for_each":                  "engine/run.TestClassCaptureIsolation",
	// labs/README.md, "Impairments" (applied by the agent over netlink:
	// agent/server.TestImpairNetlink, TestNetemAttrs; on real netem:
	// engine/vm.TestE2EExampleLabs/lossy)
	"impair.host":               "engine/run.TestImpairWholeRun",
	"impair.netdev":             "engine/run.TestImpairSweep", // unknown ones: engine/lab.TestErrorCorpus
	"impair.delay":              "engine/run.TestImpairParams",
	"impair.jitter":             "engine/run.TestImpairParams",
	"impair.loss":               "engine/run.TestImpairSweep",
	"impair.duplicate":          "engine/run.TestImpairParams",
	"impair.reorder":            "engine/run.TestImpairParams",
	"impair.corrupt":            "engine/run.TestImpairParams",
	"impair.rate":               "engine/run.TestImpairParams",
	"impair.during":             "engine/run.TestImpairSweep",
	"impair.for_each":           "engine/run.TestImpairSweep",
	"impair.count":              "engine/run.TestImpairCount",
	"workload.tool":             "steps.TestNewWorkloadKinds",
	"workload.server":           "engine/run.TestRunExecAndTCP",
	"workload.client":           "engine/run.TestRunExecAndTCP",
	"workload.host":             "engine/run.TestRunExecAndTCP",
	"workload.command":          "engine/run.TestRunExecAndTCP",
	"workload.sizes":            "kinds/perftest.TestArgvGolden",
	"workload.iterations":       "kinds/perftest.TestArgvGolden",
	"workload.duration":         "kinds/perftest.TestArgvGolden", // perftest -D; tcp duration: issue 13 (vmlink)
	"workload.qps":              "kinds/perftest.TestArgvGolden",
	"workload.transport":        "kinds/perftest.TestArgvGolden",
	"workload.bytes":            "engine/run.TestRunExecAndTCP",
	"workload.timeout":          "engine/run.TestRunExitCodes",
	"workload.repeat":           "engine/run.TestRunExecAndTCP",
	"workload.args":             "kinds/perftest.TestArgvGolden",
	"workload.expect":           "engine/run.TestRunExitCodes",
	"workload.expect.condition": "engine/run.TestRunExitCodes",
	"workload.expect.message":   "engine/run.TestRunExitCodes",
	"workload.count":            "engine/run.TestInstanceKey",
	"workload.for_each":         "cmd/rlab.TestClassNetns",
	// labs/README.md, "Blocks" and "Programs" (issue 23)
	"program.source":          "engine/run.TestNetnsProgram",          // shipped over files.write, built, gone after; confinement: engine/lab TestErrorCorpus program_*.hcl, TestProgramSourceBounds
	"program.build":           "engine/run.TestNetnsProgram",          // make on the hosts; a failing gcc names host, command, exit, error; kept across runs: TestNetnsProgramCache, kinds/program TestCacheScripts
	"program.packages":        "engine/provision.TestProgramPackages", // to the hosts of its workloads, for their family; preflight: engine/preflight.TestCheckProgramPackages
	"workload.program":        "engine/run.TestRunProgram",
	"workload.server_command": "engine/run.TestRunProgram",
	"workload.client_command": "engine/run.TestRunProgram",
	"workload.ready":          "engine/run.TestRunProgram",  // by regex; without: by port (TestNetnsProgram too)
	"workload.needs":          "engine/lab.TestErrorCorpus", // siw_program_needs.hcl: refused on siw at file:line:col, allowed on rxe; IWARPProblems: TestIWARPProblems
	"workload.metric":         "engine/run.TestRunProgram",  // samples in results.json; parser: kinds.TestReadOutputMetric
	"workload.metric.pattern": "engine/run.TestRunProgram",
	"workload.metric.unit":    "engine/run.TestRunProgram",
	"workload.metric.better":  "engine/run.TestRunProgram",
	"workload.metric.from":    "engine/run.TestRunProgram",
	"group.workloads":         "engine/run.TestGroupRunsTogether", // shared hosts start together; TestNetnsGroupIncast on real sshd; a whole for_each workload: engine/plan TestGolden/groups
	"group.for_each":          "engine/lab.TestGroups",            // one group per key
	"group.count":             "engine/lab.TestGroups",

	// shared host flags (hostFlags: facts, check, run)
	"check --accept-new-host-keys": "cmd/rlab.TestFactsHostKeysNetns",
	"facts --accept-new-host-keys": "cmd/rlab.TestFactsHostKeysNetns",
	"run --accept-new-host-keys":   "cmd/rlab.TestFactsHostKeysNetns",
	"check --identity":             "cmd/rlab.TestHostFlagsNetns",
	"facts --identity":             "cmd/rlab.TestHostFlagsNetns",
	"run --identity":               "cmd/rlab.TestHostFlagsNetns",
	"check --known-hosts":          "cmd/rlab.TestHostFlagsNetns",
	"facts --known-hosts":          "cmd/rlab.TestHostFlagsNetns",
	"run --known-hosts":            "cmd/rlab.TestHostFlagsNetns",
	"check --parallel":             "engine/run.TestRunOnlyAndParallel",
	"facts --parallel":             "engine/run.TestRunOnlyAndParallel",
	"compare --allow-incomplete":   "cmd/rlab.TestIncompleteRun",
	"run --allow-empty":            "cmd/rlab.TestEmptyLab",
	"validate --allow-empty":       "cmd/rlab.TestEmptyLab",
	"plan --allow-empty":           "cmd/rlab.TestEmptyLab",
	"check --allow-empty":          "cmd/rlab.TestEmptyLab",
	"run --parallel":               "engine/run.TestParallelBoundsWorkloads",
	"check --persist":              "cmd/rlab.TestFactsPersistNetns",
	"facts --persist":              "cmd/rlab.TestFactsPersistNetns",
	"run --persist":                "cmd/rlab.TestRunKeptAgentsNetns",
	"check --verbose":              "cmd/rlab.TestHostFlagsNetns",
	"facts --verbose":              "cmd/rlab.TestHostFlagsNetns",
	"run --verbose":                "cmd/rlab.TestHostFlagsNetns",
	"check --refresh":              "cmd/rlab.TestHostFlagsNetns",
	"facts --refresh":              "cmd/rlab.TestHostFlagsNetns",
	// shared variable flags (varFlags)
	"check --var":         "cmd/rlab.TestHostFlagsNetns",
	"facts --var":         "cmd/rlab.TestHostFlagsNetns",
	"plan --var":          "cmd/rlab.TestOneLabCommandsOnAFolder",
	"run --var":           "cmd/rlab.TestRunCmd",
	"validate --var":      "cmd/rlab.TestValidateCmd",
	"check --var-file":    "cmd/rlab.TestHostFlagsNetns",
	"facts --var-file":    "cmd/rlab.TestHostFlagsNetns",
	"plan --var-file":     "engine/lab.TestVariableSources",
	"run --var-file":      "cmd/rlab.TestHostFlagsNetns",
	"validate --var-file": "engine/lab.TestVariableSources",

	"run --agent-watchdog":        "engine/run.TestAgentWatchdogNetns",
	"check --json":                "cmd/rlab.TestCheckValidateJSON",
	"check --only":                "cmd/rlab.TestClassNetns",
	"check --out":                 "cmd/rlab.TestCheckValidatePlainLab",
	"check --validate":            "cmd/rlab.TestClassNetns",
	"--version":                   "cmd/rlab.TestVersionFlag",
	"compare --all-metrics":       "cmd/rlab.TestCompareCmdCounters",
	"compare --counters":          "cmd/rlab.TestCompareCmdCounters",
	"compare --json":              "cmd/rlab.TestCompareCmdJSONAndJUnit",
	"compare --junit":             "cmd/rlab.TestCompareCmdJSONAndJUnit",
	"compare --markdown":          "cmd/rlab.TestCompareCmd",
	"compare --metric-threshold":  "cmd/rlab.TestCompareCmd",
	"compare --threshold":         "cmd/rlab.TestCompareCmd",
	"down --accept-new-host-keys": "cmd/rlab.TestDownHostKeysNetns",
	"down --known-hosts":          "cmd/rlab.TestDownHostKeysNetns",
	"down --identity":             "cmd/rlab.TestDownHostKeysNetns",
	"down --trust-state":          "cmd/rlab.TestDownHostKeysNetns",
	"facts --json":                "cmd/rlab.TestFactsAndCheckNetns",
	"facts --host":                "cmd/rlab.TestFactsAndCheckNetns",
	"fmt --check":                 "cmd/rlab.TestFmtCmd",
	"fmt --diff":                  "cmd/rlab.TestFmtCmd",
	"graph --format":              "cmd/rlab.TestGraphCmd",
	"graph --output":              "cmd/rlab.TestGraphCmd",
	"graph --var":                 "cmd/rlab.TestGraphCmd",
	"image build --force":         "cmd/rlab.TestImageBuildFlags",
	"agent export --arch":         "cmd/rlab.TestAgentExport",
	"agent export --output":       "cmd/rlab.TestAgentExport",
	"image list --dir":            "cmd/rlab.TestImageListPrune",
	"image prune --dir":           "cmd/rlab.TestImageListPrune",
	"image prune --dry-run":       "cmd/rlab.TestImageListPrune",
	"image prune --all":           "cmd/rlab.TestImagePruneAll",
	"image build --image":         "cmd/rlab.TestImageBuildFlags", // minimal: its own package list; booted by engine/vm TestE2EProvision
	"image build --mirror":        "cmd/rlab.TestImageBuildFlags",
	"image build --out":           "cmd/rlab.TestImageBuildCached",
	"image build --release":       "cmd/rlab.TestImageBuildFlags",
	"image build --verbose":       "cmd/rlab.TestImageBuildFlags",
	"init --list":                 "cmd/rlab.TestInitList",
	"init --template":             "cmd/rlab.TestInitCmd",
	"mux status --dir":            "cmd/rlab.TestMuxCmds",
	"mux status --json":           "cmd/rlab.TestFactsPersistNetns",
	"mux stop --dir":              "cmd/rlab.TestMuxCmds",
	"pcap --flow":                 "cmd/rlab.TestPcapJSONWithFlow",
	"pcap --interval":             "cmd/rlab.TestPcapCommand",
	"pcap --iograph":              "cmd/rlab.TestPcapCommand",
	"pcap --json":                 "cmd/rlab.TestPcapJSON",
	"pcap --qp":                   "cmd/rlab.TestPcapFlowSelection",
	"pcap --conn":                 "cmd/rlab.TestPcapFlowSelection",
	"pcap --from":                 "cmd/rlab.TestPcapFlowSelection",
	"pcap --to":                   "cmd/rlab.TestPcapFlowSelection",
	"pcap --workload":             "cmd/rlab.TestPcapFlowSelection",
	"pcap --retransmits":          "cmd/rlab.TestPcapFlowSelection",
	"plan --json":                 "cmd/rlab.TestPlanCmd",
	"plan --only":                 "cmd/rlab.TestPlanOnly",
	"plan --provision":            "cmd/rlab.TestPlanProvision", // and engine/plan TestGoldenProvision
	"run --keep":                  "engine/run.TestRunRXENameAndKeep",
	"run --max-pull":              "cmd/rlab.TestRunMaxPull",
	"run --only":                  "cmd/rlab.TestRunCmd",
	"run --out":                   "cmd/rlab.TestRunCmd",
	"runs --before":               "cmd/rlab.TestRunsCmd",
	"runs --json":                 "cmd/rlab.TestRunsCmd",
	"runs --kind":                 "cmd/rlab.TestRunsLeavesChecksOut",
	"runs --lab":                  "cmd/rlab.TestRunsCmd",
	"runs --last":                 "cmd/rlab.TestRunsCmd",
	"runs --status":               "cmd/rlab.TestRunsCmd",
	"show --all":                  "cmd/rlab.TestShowClass500",
	"show --counters":             "cmd/rlab.TestShowCounters",
	"show --json":                 "cmd/rlab.TestShowJSON",
	"show --markdown":             "cmd/rlab.TestShowCmd",
	"show --render":               "cmd/rlab.TestShowCmd",
	"show --students":             "cmd/rlab.TestShowStudents",
	"validate --json":             "cmd/rlab.TestValidateCmd",

	// provisioning (issue 15)
	"ssh.provision":                    "cmd/rlab.TestProvisionCmdNetns", // inherited by every host
	"host.provision":                   "cmd/rlab.TestProvisionCmdNetns",
	"provision --json":                 "cmd/rlab.TestProvisionCmdNetns",
	"provision --out":                  "cmd/rlab.TestProvisionCmdNetns",
	"provision --lock-wait":            "engine/provision.TestProvisionNetns", // the bound of the wait for a real dpkg lock holder
	"provision --timeout":              "cmd/rlab.TestProvisionCmdNetns",
	"run --provision":                  "engine/run.TestRunProvision",
	"run --provision-lock-wait":        "cmd/rlab.TestProvisionCmdNetns",
	"run --provision-timeout":          "cmd/rlab.TestProvisionCmdNetns",
	"down --remove-provisioned":        "engine/run.TestRunProvision",
	"provision --accept-new-host-keys": "cmd/rlab.TestFactsHostKeysNetns",
	"provision --identity":             "cmd/rlab.TestHostFlagsNetns",
	"provision --known-hosts":          "cmd/rlab.TestHostFlagsNetns",
	"provision --parallel":             "engine/run.TestRunOnlyAndParallel",
	"provision --persist":              "cmd/rlab.TestFactsPersistNetns",
	"provision --verbose":              "cmd/rlab.TestHostFlagsNetns",
	"provision --var":                  "cmd/rlab.TestHostFlagsNetns",
	"provision --var-file":             "cmd/rlab.TestHostFlagsNetns",
}

// labAttrs reads the attributes the "## Blocks" HCL of labs/README.md
// documents, as BLOCK.ATTR keys, plus count and for_each, which its prose
// documents for host, rxe, capture and workload.
func labAttrs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../labs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## Blocks")
	if start < 0 {
		t.Fatal("labs/README.md has no ## Blocks section")
	}
	code := doc[start:]
	code = code[strings.Index(code, "```hcl")+len("```hcl"):]
	code = code[:strings.Index(code, "```")]
	blockRE := regexp.MustCompile(`^\s*([a-z_]+)(\s+"[^"]*")*\s*\{`)
	attrRE := regexp.MustCompile(`(?:^|;)\s*([a-z_]+)\s*=`)
	seen := map[string]bool{}
	var stack []string
	for _, line := range strings.Split(code, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if m := blockRE.FindStringSubmatch(line); m != nil {
			stack = append(stack, m[1])
			seen[strings.Join(stack, ".")] = true // a nested block is documented too
			line = line[len(m[0]):]
		}
		for _, m := range attrRE.FindAllStringSubmatch(line, -1) {
			if len(stack) > 0 {
				seen[strings.Join(stack, ".")+"."+m[1]] = true
			}
		}
		closes := strings.Count(line, "}") - strings.Count(line, "{")
		for ; closes > 0 && len(stack) > 0; closes-- {
			stack = stack[:len(stack)-1]
		}
	}
	for _, top := range []string{"lab", "variable", "locals", "ssh", "host", "rxe", "capture", "workload", "impair", "group", "siw", "rdma", "program"} {
		delete(seen, top) // top-level blocks: their attributes are the options
	}
	for k := range seen {
		if strings.HasPrefix(k, "locals.") {
			delete(seen, k) // local values are named by the user
		}
	}
	// The workload options of "Tools and their options" (its header row).
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| tool |") {
			for _, col := range strings.Split(line, "|") {
				if col = strings.TrimSpace(col); regexp.MustCompile(`^[a-z_]+$`).MatchString(col) && col != "tool" {
					seen["workload."+col] = true
				}
			}
		}
	}
	if strings.Contains(doc, "`count = N`") {
		for _, k := range []string{"host", "rxe", "capture", "workload", "impair", "group", "siw", "rdma"} {
			seen[k+".count"] = true
			seen[k+".for_each"] = true
		}
	}
	return keys(seen)
}

// cliFlags walks the command tree: "CMD --flag" for every flag a command
// defines (its --help lists them), help aside.
func cliFlags() []string {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "rlab")
		path = strings.TrimSpace(path)
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				seen[strings.TrimSpace(path+" --"+f.Name)] = true
			}
		})
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				seen[strings.TrimSpace(path+" --"+f.Name)] = true
			}
		})
		for _, s := range c.Commands() {
			if !s.Hidden && s.Name() != "help" && s.Name() != "completion" {
				walk(s)
			}
		}
	}
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultVersionFlag() // --version, which cobra adds at Execute
	walk(root)
	return keys(seen)
}

// readmeFlags are the --long flags README.md names, each with the commands
// that define it ("" when none does).
func readmeFlags(t *testing.T, flags []string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range regexp.MustCompile("(?:^|[ `\\[(])(--?[a-z][a-z0-9-]+)").FindAllStringSubmatch(string(b), -1) {
		name := "--" + strings.TrimLeft(m[1], "-")
		switch name {
		case "--update", // go test -update
			"--help",   // every command's
			"--netdev", // QEMU's -netdev
			"--kep":    // the mistyped flag of the did-you-mean example
			continue
		}
		out[name] = nil
	}
	for _, k := range flags {
		_, f, _ := strings.Cut(" "+k, " --") // root flags are "--name"
		if _, ok := out["--"+f]; ok {
			out["--"+f] = append(out["--"+f], k)
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// testFuncs finds every func TestX in the repository's _test.go files, as
// "<package dir>.TestX".
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", filepath.Dir(p))
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[filepath.ToSlash(rel)+"."+m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocumentedOptionsProven: every attribute labs/README.md documents and
// every flag of every command (its --help) has a proving test in
// optionProofs, every test named there exists, and every flag README.md
// names exists on some command.
func TestDocumentedOptionsProven(t *testing.T) {
	tests := testFuncs(t)
	flags := cliFlags()
	documented := map[string]bool{}
	for _, k := range append(labAttrs(t), flags...) {
		documented[k] = true
		proof, ok := optionProofs[k]
		if !ok {
			t.Errorf("%q is documented but has no proving test in optionProofs (cmd/rlab/docs_test.go): write one, or remove the option", k)
			continue
		}
		if !tests[proof] {
			t.Errorf("%q: optionProofs names %s, which does not exist", k, proof)
		}
	}
	for k := range optionProofs {
		if !documented[k] {
			t.Errorf("optionProofs has %q, which neither labs/README.md nor any --help documents: remove the entry", k)
		}
	}
	for f, cmds := range readmeFlags(t, flags) {
		if len(cmds) == 0 {
			t.Errorf("README.md names %s, which no rlab command has", f)
		}
	}
}
