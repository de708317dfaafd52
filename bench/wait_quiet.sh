# Sourced by the bench scripts. wait_quiet: returns once /proc/stat has shown >= 95% idle for 3
# consecutive seconds (at most 10 minutes): other builds on a 2-core machine halve OpenMP throughput.
wait_quiet() {
    local ok=0 start=$SECONDS _ u n s i w x y z t1 t2 i1 i2  # all local: callers loop over i
    while [ $ok -lt 3 ] && [ $((SECONDS - start)) -lt 600 ]; do
        read -r _ u n s i w x y z _ < /proc/stat; local t1=$((u + n + s + i + w + x + y + z)) i1=$i
        sleep 1
        read -r _ u n s i w x y z _ < /proc/stat; local t2=$((u + n + s + i + w + x + y + z)) i2=$i
        if [ $((100 * (i2 - i1) / (t2 - t1))) -ge 95 ]; then ok=$((ok + 1)); else ok=0; fi
    done
}
