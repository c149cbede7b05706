# Sourced by bench scripts that run the daemons of a `drover up` directory
# themselves (chaos.sh, db_outage.sh): `start ctld|agent|dbd` starts one
# in the foreground mode (-D) in the background, its log appended under
# $DIR/log and its pid in $DIR/pids/NAME. Needs $BIN and $DIR.
mkdir -p "$DIR/log" "$DIR/pids"
start() {
  case $1 in
    ctld) "$BIN/droverctld" -D -f "$DIR/drover.conf" >> "$DIR/log/droverctld.log" 2>&1 & ;;
    agent) "$BIN/droverd" -D -f "$DIR/drover.conf" -N 'node[1-4]' >> "$DIR/log/droverd.log" 2>&1 & ;;
    dbd) "$BIN/droverdbd" -D -f "$DIR/droverdbd.conf" >> "$DIR/log/droverdbd.log" 2>&1 & ;;
  esac
  echo $! > "$DIR/pids/$1"
}
