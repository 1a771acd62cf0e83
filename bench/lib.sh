# Shared by bench/run.sh and bench/store.sh (sourced).

# medians FILE METRIC: the median, min and max of METRIC per benchmark in go
# test output FILE.
medians() {
  awk -v m="$2" '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i+1) == m) print $1, $i }' "$1" |
    sort -k1,1 -k2,2n |
    awk '{ v[$1] = v[$1] " " $2; n[$1]++ }
         END { for (k in v) { split(substr(v[k], 2), a, " "); c = n[k];
               med = (c % 2) ? a[(c+1)/2] : (a[c/2] + a[c/2+1]) / 2;
               printf "%-32s median %8.0f  min %8.0f  max %8.0f  (%d runs)\n", k, med, a[1], a[c], c } }' | sort
}
