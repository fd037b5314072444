#!/usr/bin/env bash
# Every test's wall time from a nextest JUnit record, slowest first, as a Markdown table
# (docs/testing.md's), with the total; a test that failed or timed out is marked.
#   scripts/test-times.sh [JUNIT]    (default: the last `make test`'s record)
set -euo pipefail
junit=${1:-$(cd "$(dirname "$0")/.." && pwd)/target/nextest/default/junit.xml}
[[ -f $junit ]] || { echo "test-times: no JUnit record at $junit (run make test first)" >&2; exit 1; }
perl -0777 -ne '
  while (/<testcase\b([^>]*?)(\/>|>(.*?)<\/testcase>)/sg) {
    my ($a, $body) = ($1, $3 // "");
    my %h = $a =~ /(\w+)="([^"]*)"/g;
    my $bad = $body =~ /<(failure|error)\b/ ? " (failed)" : "";
    push @t, [$h{time}, "$h{classname} $h{name}$bad"];
    $sum += $h{time};
  }
  END {
    printf "| s | test |\n| ---: | --- |\n";
    printf "| %.1f | %s |\n", @$_ for sort { $b->[0] <=> $a->[0] } @t;
    printf "\n%d tests, %.0f s of test time in all\n", scalar @t, $sum;
  }' "$junit"
