#!/bin/sh
# A test double of rlab-agent for engine/remote's unit tests: it prints what
# a login script might, then a hello carrying its own sha256 (as the real
# agent does), then answers requests line by line. Methods: ping -> result;
# fail -> error; event -> one event then a result; die -> exits mid-call;
# release -> an empty cleanup result (unknown with FAKE_NO_RELEASE=1, one
# with an error it could not undo with FAKE_RELEASE_ERRORS=1). With
# FAKE_MARK=FILE it creates FILE once its hello is written.
# $1=serve $2=--run-id $3=ID $4=--work-dir $5=DIR
echo "Welcome to the lab host (login script noise)"
h=$(sha256sum "$0" | cut -d' ' -f1)
[ "$FAKE_BAD_HASH" = 1 ] && h=0000
echo "fake agent log line on stderr" >&2
printf '{"magic":"rlab-agent","proto":1,"hash":"%s","version":"fake","pid":%d,"work_dir":"%s"}\n' "$h" $$ "$5"
[ -n "$FAKE_MARK" ] && : > "$FAKE_MARK"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
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
