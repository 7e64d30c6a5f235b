#!/usr/bin/env bash
# rename.sh: issue 22 item 4, "one meaning each for step, unit and kind", and
# an RDMA device is a device whatever its driver. Run from anywhere; it works
# on the checkout it lives in. Idempotent: each rename is found by a pattern
# of its declaration, at run time, and skipped when that pattern no longer
# matches (already renamed, or the code moved: then it says so).
#
# The vocabulary after it:
#   kind  = a tool family (package kinds, kinds.Kind, kinds/<family>/).
#   step  = one thing the engine does on hosts (connect, create a device,
#           run a workload): a node of the plan's DAG (plan.Step); package
#           steps implements the ones that call the agent (steps.Step).
#   unit  = a unit of measure (kinds.Unit, "MiB/s", "us").
#   device = an RDMA device, whatever its driver (rxe, siw, hardware).
# Other uses get other words: what a plan step does is its Action; one
# size x repeat of a workload is a Trial; what made a device is its Block
# (lab) or Driver (facts); a sample's origin is its Source; etc.
#
# Wire formats stay: every JSON key (results.json, events.jsonl, state.json,
# plan --json, facts), every event type value ("unit") and every RPC method
# string ("rxe.ensure", "rxe.delete") and error code ("no_rxe") keeps its
# spelling, so old run directories read as before and a kept agent of the
# same protocol answers. Only Go identifiers and comments change.
#
# Needs gopls (go install golang.org/x/tools/gopls@latest) and perl.
set -euo pipefail
cd "$(dirname "$0")"

GOPLS=${GOPLS:-gopls}
command -v "$GOPLS" >/dev/null || GOPLS=$(go env GOPATH)/bin/gopls
missing=()

# One gopls daemon for the whole script keeps its cache warm: a rename then
# takes seconds, not half a minute. It is ours, ended on exit.
sock=$(mktemp -u /tmp/rename-gopls.XXXXXX)
"$GOPLS" serve -listen="unix;$sock" -listen.timeout=5m >/dev/null 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true; rm -f "$sock"' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.2; done

# ren FILE REGEX NEW: rename the identifier that REGEX's first group
# matches (perl, whole file, (?m)/(?s) as needed) in FILE to NEW.
ren() {
	local file=$1 re=$2 new=$3 off
	if [ ! -f "$file" ]; then
		missing+=("$new ($file gone)")
		echo "skip  -> $new: $file gone" >&2
		return 0
	fi
	off=$(RE="$re" perl -0777 -ne 'print $-[1] if /$ENV{RE}/' "$file")
	if [ -z "$off" ]; then
		if NEW="$new" perl -0777 -ne 'exit(/\b\Q$ENV{NEW}\E\b/ ? 0 : 1)' "$file"; then
			echo "done  -> $new ($file)" >&2
		else
			missing+=("$new ($file: pattern not found)")
			echo "MISS  -> $new: pattern not found in $file" >&2
		fi
		return 0
	fi
	echo "rename $(perl -0777 -ne 'print substr($_, '"$off"', 40) =~ /^(\w+)/' "$file") -> $new ($file)" >&2
	if ! "$GOPLS" -remote="unix;$sock" rename -w "$file:#$off" "$new" >/dev/null; then
		missing+=("$new ($file: gopls rename failed)")
	fi
}

## kind: one meaning, a tool family. Everything else called Kind is renamed.

# What a plan step does: its Action ("connect", "create-rxe", ...).
ren engine/plan/plan.go '(?m)^type (Kind) string' Action
ren engine/plan/plan.go '(?m)^\t(Kind)\s+Action\s+`json:"kind"`' Action
ren engine/plan/phases.go '(?m)^func (KindsOf)\(' ActionsOf
ren engine/plan/phases.go '(?m)^\t(Kinds)\s+\[\]Action\b' Actions
# The device steps and phase make a device of any driver.
ren engine/plan/plan.go '(?m)^\t(CreateRXE)\s' CreateDevice
ren engine/plan/phases.go '(?m)^\t(PhaseRXE)\s' PhaseDevice

# What declared a device in the lab: its Block (rxe, siw, rdma).
ren engine/lab/model.go '(?m)^\t(Kind)\s+string // the block: "rxe", "siw" or "rdma"' Block
ren engine/lab/rxe.go '(?m)^var (DeviceKinds) =' DeviceBlocks
ren engine/lab/rxe.go '(?m)^func (deviceRefKind)\(' deviceRefBlock
ren engine/lab/family.go '(?m)^func (refKindOf)\(' refBlockOf
ren engine/graph/graph.go '(?m)^\t(Kind)\s+string // the lab.s block: rxe, siw or rdma' Block

# What facts call a device's kind is its driver: rxe, siw, or hw.
ren agent/proto/proto.go '(?m)^type RDMADevice struct \{[^}]*?^\t(Kind)\s' Driver
ren agent/proto/proto.go '(?m)^type DeviceInfo struct \{[^}]*?^\t(Kind)\s' Driver
ren agent/server/facts.go '(?m)^func (deviceKind)\(' deviceDriver
ren engine/report/model.go '(?m)^type RDMADev struct \{[^}]*?^\t(Kind)\s' Driver

# A sample's Source: a tool's measure or a kernel counter.
ren engine/results/results.go '(?m)^type Sample struct \{[^}]*?^\t(Kind)\s' Source
ren engine/results/results.go '(?m)^\t(KindTool)\s' SourceTool
ren engine/results/results.go '(?m)^\t(KindCounter)\s' SourceCounter
ren engine/results/results.go '(?m)^func (KindOf)\(' SourceOf

# An artifact's Type (capture, log).
ren engine/results/run.go '(?m)^type Artifact struct \{[^}]*?^\t(Kind)\s' Type
# A counter's Class (traffic, trouble) and a counter note's Problem.
ren engine/results/counters.go '(?m)^type Counter struct \{[^}]*?^\t(Kind)\s' Class
ren engine/results/counters.go '(?m)^\t(Kind)\s+string\s+`json:"kind"`\n\tReason' Problem
ren engine/report/model.go '(?m)^type CounterNote struct \{[^}]*?^\t(Kind)\s' Problem
# A report workload's chart family (bw, lat, ...), as kinds.Tool.Chart.
ren engine/report/model.go '(?m)^\t(Kind)\s+string\s+`json:"kind"` // bw, lat' ChartFamily
ren engine/report/build.go '(?m)^func (toolKind)\(' chartFamily

# How a chart draws: its Type (lines, bars).
ren kinds/view.go '(?m)^type (ChartKind) int' ChartType
ren kinds/view.go '(?m)^type Chart struct \{[^}]*?^\t(Kind)\s' Type

# A decoded frame's Proto (other, TCP, RoCE); roce.Class is the opcode's.
ren engine/roce/decode.go '(?m)^type (Kind) uint8' Proto
ren engine/roce/decode.go '(?m)^\t(KindOther) ' ProtoOther
ren engine/roce/decode.go '(?m)^\t(KindTCP|ClassTCP)\b' ProtoTCP
ren engine/roce/decode.go '(?m)^\t(KindRoCE|ClassRoCE)\b' ProtoRoCE
ren engine/roce/decode.go '(?m)^type Packet struct \{[^}]*?^\t(Kind)\s' Proto

# A journaled side effect's Type (rxe, proc, capture, tcp, impair).
ren steps/steps.go '(?m)^type Effect struct \{[^}]*?^\t(Kind)\s' Type
# rlab runs --json: a listing's Type (run, check).
ren cmd/rlab/runs.go '(?m)^type runListing struct \{[^}]*?^\t(Kind)\s' Type

# A report netdev's RDMA devices on top of it (rxe or siw).
ren engine/report/model.go '(?m)^\t(RXE)\s+string\s+`json:"rxe,omitempty"`' Devices

## unit: one meaning, a unit of measure.

# One size x repeat of a workload is a Trial.
ren steps/prologue.go '(?m)^type (Unit) struct' Trial
ren steps/prologue.go '(?m)^func (Units)\(' Trials
ren steps/prologue.go '(?m)^func (RunUnits)\(' RunTrials
ren steps/prologue.go '(?m)^func (runUnit)\(' runTrial
ren steps/steps.go '(?m)^\t(UnitStart) func' TrialStart
ren engine/runevent/runevent.go '(?m)^\t(Unit) += "unit"' Trial
ren cmd/rlab/progress.go '(?m)^func \(r \*runningWorkloads\) (setUnit)\(' setTrial
ren cmd/rlab/progress.go '(?m)^\t(unit) +map\[string\]string' trial
ren cmd/rlab/steplog.go '(?m)^type runningStep struct \{[^}]*?^\t(unit)\s' trial
# The labs a path holds.
ren engine/lab/units_dir.go '(?m)^func (Units)\(' Split
# Workloads placed together (a group, or one alone) are a batch.
ren engine/plan/plan.go '(?m)^\t\t(unit) := \[\]\*lab\.Workload' batch
ren engine/plan/plan.go '(?m)^\t\tvar (unitSteps) \[\]string' batchSteps

## step: one meaning (above). The lab's evaluation budget counts operations.
ren engine/lab/budget.go '(?m)^\t(MaxEvalSteps) =' MaxEvalOps

## RXE that means any RDMA device. Left as they are, because they mean
## rdma_rxe itself: Facts.RXEModule and needs.RXEModule (the module),
## RXEActiveMTU (rxe's MTU rule), NoRXEMessage, rxeOn, preflight.CodeNoRXE
## (the rdma_rxe check), CONFIG_RDMA_RXE, rxe_* netdev/device names.
ren agent/proto/proto.go '(?m)^\t(MethodRXEEnsure)\s' MethodDeviceEnsure
ren agent/proto/proto.go '(?m)^\t(MethodRXEDelete)\s' MethodDeviceDelete
ren agent/proto/proto.go '(?m)^type (RXEEnsureParams) struct' DeviceEnsureParams
ren agent/proto/proto.go '(?m)^type (RXEDeleteParams) struct' DeviceDeleteParams
ren agent/proto/proto.go '(?m)^type (RXEDeleteResult) struct' DeviceDeleteResult
ren agent/proto/proto.go '(?m)^\t(RXEDeleted)\s' DevicesDeleted
ren agent/proto/proto.go '(?m)^\t(CodeNoRXE)\s' CodeNoModule
ren agent/rpc/methods.go '(?m)^\t(RXEEnsure)\s' DeviceEnsure
ren agent/rpc/methods.go '(?m)^\t(RXEDelete)\s' DeviceDelete
ren agent/server/rxe.go '(?m)^func \(s \*Server\) (rxeEnsure)\(' deviceEnsure
ren agent/server/rxe.go '(?m)^func \(s \*Server\) (rxeDelete)\(' deviceDelete
ren agent/server/rxe.go '(?m)^func \(s \*Server\) (deleteRXE)\(' deleteDevice
ren agent/server/rxe.go '(?m)^const (defaultRXEWait) ' defaultDeviceWait
ren steps/steps.go '(?m)^\t(DialRXE)\s' DialDevice
ren steps/steps.go '(?m)^func \(e \*Env\) (SetRXE)\(' SetDevice
ren steps/rxe.go '(?m)^func (checkRXEInfo)\(' checkDeviceInfo
ren engine/lab/model.go '(?m)^func \(l \*Lab\) (RXEByName)\(' DeviceByName
ren engine/lab/load.go '(?m)^\t(rxeByName)\s' deviceByName
ren engine/lab/load.go '(?m)^\thostObjs, (rxeObjs), ' deviceObjs
ren engine/lab/rxe.go '(?m)^var (rxeSchema) =' softDeviceSchema
ren engine/lab/rxe.go '(?m)^var (rxeNameRe) =' deviceNameRe
ren engine/graph/graph.go '(?m)^func \(h \*Host\) (moveRXE)\(' moveDevice
ren engine/plan/select.go '(?m)^\t(usedRXE) := ' usedDevice
ren engine/plan/plan.go '(?m)^\t(rxeStep) := map\[\*lab\.Device\]string' deviceStep
ren engine/plan/plan.go '(?m)^func \(b \*builder\) addWorkload\(.*?(rxeStep) map' deviceStep
ren engine/plan/impair.go '(?m)^func \(b \*builder\) impairStarts\(.*?(rxeStep) map' deviceStep
ren engine/run/phases.go '(?m)^func \(r \*runner\) (createRXE)\(' createDevices

## engine/run/report.go writes results.json, summary.md and junit.xml, not
## the report: the file is results.go.
if [ -f engine/run/report.go ] && [ ! -e engine/run/results.go ] && grep -q '^func (r \*runner) writeResults(' engine/run/report.go; then
	git mv engine/run/report.go engine/run/results.go
	echo "moved engine/run/report.go -> engine/run/results.go" >&2
fi
perl -pi -e 's/results\.json \(report\.go\)/results.json (results.go)/g' engine/run/*.go

## Comments gopls does not touch, where the new word is the only reading.
sed -i 's/^\/\/ Kind is what a step does\.$/\/\/ Action is what a step does./; s/^\/\/ Step kinds, in the order/\/\/ Step actions, in the order/' engine/plan/plan.go
sed -i 's/^\/\/ Unit is one run of a workload: one size × repeat\.$/\/\/ Trial is one run of a workload: one size × repeat./; s/^\/\/ Units lists w.s runs/\/\/ Trials lists w'"'"'s runs/; s/^\/\/ RunUnits is the prologue/\/\/ RunTrials is the prologue/; s/^\/\/ runUnit runs one unit/\/\/ runTrial runs one trial/' steps/prologue.go
sed -i 's/^\/\/ Kind says what a frame turned out to be\./\/\/ Proto says what a frame turned out to be./' engine/roce/decode.go
sed -i 's/^\/\/ Units splits a path/\/\/ Split splits a path/' engine/lab/units_dir.go
sed -i 's/^\/\/ RXEByName returns the rxe with/\/\/ DeviceByName returns the device with/' engine/lab/model.go
sed -i 's/^\/\/ ChartKind is how a chart draws/\/\/ ChartType is how a chart draws/; s/^\/\/ The chart kinds\.$/\/\/ The chart types./' kinds/view.go
sed -i 's/^\/\/ toolKind is the chart family/\/\/ chartFamily is the chart family/' engine/report/build.go
sed -i 's/^\/\/ KindOf is a sample.s kind: its own, else KindCounter/\/\/ SourceOf is a sample'"'"'s source: its own, else SourceCounter/; s/^\/\/ Sample kinds\.$/\/\/ Sample sources./; s/^\t\/\/ Kind is KindTool for/\t\/\/ Source is SourceTool for/; s/^\t\/\/ KindCounter for a kernel/\t\/\/ SourceCounter for a kernel/; s/fills it when a step left it empty (KindOf)/fills it when a step left it empty (SourceOf)/' engine/results/results.go
sed -i 's/^\t\/\/ Kind is "unreadable", "absent" or "reset"\./\t\/\/ Problem is "unreadable", "absent" or "reset"./' engine/results/counters.go
sed -i 's/^\t\/\/ MaxEvalSteps bounds the work/\t\/\/ MaxEvalOps bounds the work/; s/makes (one step per element, deep)/makes (one operation per element, deep)/; s/^\/\/ MaxEvalSteps or MaxEvalBytes/\/\/ MaxEvalOps or MaxEvalBytes/' engine/lab/budget.go
sed -i 's/^\/\/ Note upserts by (Host, Kind, ID)/\/\/ Note upserts by (Host, Type, ID)/' steps/steps.go
sed -i 's/^\t\/\/ UnitStart, when set, is told as each unit of a workload/\t\/\/ TrialStart, when set, is told as each trial of a workload/' steps/steps.go

# Distinctive old names left in comments, docs and testdata (gopls renames
# only code and the declaration's own doc comment). Code no longer spells
# them, so a whole-word replacement touches only prose.
words='RunUnits:RunTrials UnitStart:TrialStart RXEByName:DeviceByName
MethodRXEEnsure:MethodDeviceEnsure MethodRXEDelete:MethodDeviceDelete
RXEEnsureParams:DeviceEnsureParams RXEDeleteParams:DeviceDeleteParams
RXEDeleteResult:DeviceDeleteResult RXEInfo:DeviceInfo toolKind:chartFamily
ChartKind:ChartType DialRXE:DialDevice SetRXE:SetDevice DeviceKinds:DeviceBlocks
CreateRXE:CreateDevice PhaseRXE:PhaseDevice KindsOf:ActionsOf
MaxEvalSteps:MaxEvalOps RXEDeleted:DevicesDeleted deleteRXE:deleteDevice
createRXE:createDevices checkRXEInfo:checkDeviceInfo KindTool:SourceTool
KindCounter:SourceCounter setUnit:setTrial rpc.RXEEnsure:rpc.DeviceEnsure
rpc.RXEDelete:rpc.DeviceDelete rxeEnsure:deviceEnsure rxeDelete:deviceDelete
KindOther:ProtoOther KindTCP:ProtoTCP KindRoCE:ProtoRoCE'
expr=
for w in $words; do
	expr="$expr s/\\b${w%%:*}\\b/${w#*:}/g;"
done
git ls-files '*.go' '*.md' | grep -v '^rename.sh$' | xargs perl -pi -e "$expr"
# The same, for the generic words, in the few doc lines that name them.
perl -pi -e 's/^(\/\/ SourceOf is a sample.s) kind:/$1 source:/' engine/results/results.go

# "unit" as a trial, in the prose of the files that run trials.
perl -pi -e 's/\bunits\b/trials/g; s/\bunit\b/trial/g; s/\brunUnits\b/runTrials/g' steps/prologue.go
perl -pi -e 's/the unit prologue RunTrials/the trial prologue RunTrials/; s/^(\/\/ Step is one) unit of work/$1 piece of work/; s/told as each unit of a workload/told as each trial of a workload/; s/^(\tTrialStart func\(workload,) unit string\)/$1 trial string)/' steps/steps.go
perl -pi -e 's/\(run\.EventUnit\)/(runevent.Trial)/; s/records the unit \(size/records the trial (size/' cmd/rlab/progress.go
perl -pi -e 's/the workload.s unit \(size/the workload'"'"'s trial (size/' cmd/rlab/steplog.go
perl -pi -e 's/^(\t\/\/ Trial is the start of one) unit of a workload/$1 trial of a workload/' engine/runevent/runevent.go

# Doc lines of the renamed declarations that still said "kind".
perl -pi -e 's/^(\t\/\/ Driver is the device.s) kind as facts report it/$1 driver as facts report it/' agent/proto/proto.go
perl -pi -e 's/^(\/\/ ActionsOf are the) kinds of step/$1 actions of the steps/' engine/plan/phases.go
perl -pi -e 's/^(\/\/ deviceRefBlock is the) kind of device reference v is/$1 block of the device reference v/' engine/lab/rxe.go
perl -pi -e 's/^(\/\/ refBlockOf is the) kind of a reference value/$1 block of a reference value/' engine/lab/family.go

# "kind" meaning a kind of step, in prose.
perl -0pi -e 's/\A\/\/ Package steps holds the kinds of step the run engine drives on hosts: rxe\n\/\/ devices,/\/\/ Package steps holds the steps the run engine drives on hosts: RDMA\n\/\/ devices,/; s/through the kinds registry\. Each kind is a type behind one small\n/through the kinds registry. Each step is a type behind one small\n/; s/interfaces\. Kinds talk to hosts only through/interfaces. Steps talk to hosts only through/; s/so every kind is testable against\n/so every step is testable against\n/' steps/steps.go
perl -pi -e 's/^(\/\/ Phases are a run.s phases in order, each with the) kinds of step it/$1 actions it/' engine/plan/phases.go
perl -pi -e 's/every step kind is testable against/every step is testable against/' internal/archtest/rules.go

# The report template reads the renamed fields by name.
perl -pi -e 's/\{\{hint \.Kind\}\}/{{hint .ChartFamily}}/; s/\{\{if eq \.Kind "absent"\}\}muted\{\{else\}\}error\{\{end\}\}">\{\{\.Kind\}\}/{{if eq .Problem "absent"}}muted{{else}}error{{end}}">{{.Problem}}/; s/<td>\{\{\.Name\}\}<\/td><td>\{\{\.Kind\}\}<\/td><td>\{\{\.Parent\}\}/<td>{{.Name}}<\/td><td>{{.Driver}}<\/td><td>{{.Parent}}/; s/<td>\{\{\.RXE\}\}<\/td>/<td>{{.Devices}}<\/td>/' templates/report/report.html.tmpl

gofmt -w $(git ls-files '*.go')

if [ ${#missing[@]} -gt 0 ]; then
	printf 'not found (check by hand): %s\n' "${missing[@]}" >&2
	exit 1
fi
