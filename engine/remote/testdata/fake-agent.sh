#!/bin/sh
# A test double of rlab-agent for engine/remote's unit tests: it prints what
# a login script might, then a hello carrying its own sha256 (as the real
# agent does), then answers requests line by line. Methods: ping -> result;
# fail -> error; event -> one event then a result; die -> exits mid-call;
# release -> an empty cleanup result (unknown with FAKE_NO_RELEASE=1, one
# with an error it could not undo with FAKE_RELEASE_ERRORS=1); lease ->
# the work dir <runs base>/<run id>/<host leaf> of its start work dir, only
# as the first request after its start or a release (else busy; unknown, as
# agents from before leases, with FAKE_NO_LEASE=1; FAKE_LEASE_DIR when
# set; a path of FAKE_LEASE_DIR_BYTES bytes when that is). With FAKE_MARK=FILE it
# creates FILE once its hello is written.
# $1=serve $2=--run-id $3=ID $4=--work-dir $5=DIR
echo "Welcome to the lab host (login script noise)"
h=$(sha256sum "$0" | cut -d' ' -f1)
[ "$FAKE_BAD_HASH" = 1 ] && h=0000
echo "fake agent log line on stderr" >&2
printf '{"magic":"rlab-agent","proto":1,"hash":"%s","version":"fake","pid":%d,"work_dir":"%s"}\n' "$h" $$ "$5"
[ -n "$FAKE_MARK" ] && : > "$FAKE_MARK"
[ -n "$FAKE_LEASE_DIR_BYTES" ] && FAKE_LEASE_DIR="/$(head -c "$((FAKE_LEASE_DIR_BYTES - 1))" /dev/zero | tr '\0' x)"
used=0
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
    *'"method":"lease"'*)
      if [ "$FAKE_NO_LEASE" = 1 ]; then
        printf '{"id":%s,"error":{"code":"unknown_method","message":"unknown method \"lease\""}}\n' "$id"
      elif [ $used = 1 ]; then
        printf '{"id":%s,"error":{"code":"busy","message":"lease: the agent is serving a client already"}}\n' "$id"
      else
        [ -n "$FAKE_LEASE_DIR" ] && { printf '{"id":%s,"result":{"work_dir":"%s"}}\n' "$id" "$FAKE_LEASE_DIR"; used=1; continue; }
        run=$(printf '%s' "$line" | sed 's/.*"run_id":"\([A-Za-z0-9._-]*\)".*/\1/')
        printf '{"id":%s,"result":{"work_dir":"%s/%s/%s"}}\n' "$id" "$(dirname "$(dirname "$5")")" "$run" "$(basename "$5")"
      fi
      used=1; continue ;;
    *'"method":"release"'*) used=0 ;;
    *) used=1 ;;
  esac
  case "$line" in
    *'"method":"ping"'*) printf '{"id":%s,"result":{"time_unix_nano":42}}\n' "$id" ;;
    *'"method":"fail"'*) printf '{"id":%s,"error":{"code":"not_found","message":"no such netdev eth9","command":["ip","link"],"exit_code":1,"stderr":"boom"}}\n' "$id" ;;
    *'"method":"event"'*) printf '{"id":%s,"event":"log","data":{"msg":"hi"}}\n{"id":%s,"result":{}}\n' "$id" "$id" ;;
    *'"method":"die"'*) echo "dying" >&2; exit 3 ;;
    *'"method":"release"'*)
      if [ "$FAKE_RELEASE_ERRORS" = 1 ]; then
        printf '{"id":%s,"result":{"stopped":[],"rxe_deleted":[],"errors":["delete rxe \\"rxe0\\": busy"]}}\n' "$id"
      elif [ "$FAKE_NO_RELEASE" = 1 ]; then
        printf '{"id":%s,"error":{"code":"unknown_method","message":"unknown method \"release\""}}\n' "$id"
      else
        printf '{"id":%s,"result":{"stopped":[],"rxe_deleted":[]}}\n' "$id"
      fi ;;
    *) printf '{"id":%s,"error":{"code":"unknown_method","message":"unknown"}}\n' "$id" ;;
  esac
done
