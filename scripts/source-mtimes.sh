#!/usr/bin/env bash
# Gives a fresh clone's unchanged files the modification times the build cache knows.
#
#   scripts/source-mtimes.sh record  BUILD_DIR   after the tests' build has finished
#   scripts/source-mtimes.sh restore BUILD_DIR   before the next one (in any clone)
#
# Cargo judges a workspace crate fresh by comparing its files' modification times with
# its last build's, not their contents. Every file of a new clone is newer than the
# cache, so a clone rebuilds all of the workspace's crates (about 7 minutes on 2 cores)
# even when nothing changed: CI pays it on every run. `record` writes, once the tests'
# build is complete, each tracked file's content hash and modification time; `restore`
# gives each file whose content is the recorded one its recorded time back, so only the
# crates whose files differ rebuild. Why it cannot hide a change:
# - a file whose content differs from the record's, or that differs from its commit in
#   the working tree, keeps its own (new) time, and its crates rebuild;
# - the record is taken only when every unit the tests use was just built from the tree
#   it describes, and restoring removes it, so a build cut short leaves none;
# - any build into the cache after the record (another clone, a plain `cargo build`)
#   leaves a fingerprint newer than it, and the record is then ignored.
set -euo pipefail
action=${1:?usage: $0 record|restore BUILD_DIR}
build_dir=${2:?usage: $0 record|restore BUILD_DIR}
record="$build_dir/source-mtimes.tsv"
fingerprints="$build_dir/release/.fingerprint"
cd "$(dirname "$0")/.."

# Tracked files whose working copy is the commit's, as "hash<TAB>path" (NUL-separated).
unchanged_files() {
	git ls-files -s -z | perl -0 -ne '
		BEGIN { %modified = map { $_ => 1 } split /\0/, `git ls-files -m -z` }
		chomp; my ($meta, $path) = split /\t/, $_, 2;
		my (undef, $hash, $stage) = split / /, $meta;
		print "$hash\t$path\0" if $stage == 0 && !$modified{$path};'
}

case "$action" in
record)
	unchanged_files | perl -MTime::HiRes=stat -0 -ne '
		chomp; my ($hash, $path) = split /\t/, $_, 2;
		my $mtime = (stat $path)[9];
		printf "%s\t%.9f\t%s\n", $hash, $mtime, $path if defined $mtime;' >"$record.new"
	mv "$record.new" "$record"
	;;
restore)
	[ -f "$record" ] || exit 0
	if [ -d "$fingerprints" ] && [ -n "$(find "$fingerprints" -newer "$record" -print -quit)" ]; then
		echo "source-mtimes: the build cache changed after its record; every crate is judged by its own times"
		rm -f "$record"
		exit 0
	fi
	unchanged_files | perl -MTime::HiRes=utime -0 -e '
		open my $r, "<", shift or die "$!";
		my %recorded;
		{ local $/ = "\n"; while (<$r>) { chomp; my ($hash, $mtime, $path) = split /\t/, $_, 3; $recorded{$path} = [$hash, $mtime] } }
		my ($restored, $kept) = (0, 0);
		while (<STDIN>) {
			chomp; my ($hash, $path) = split /\t/, $_, 2;
			my $was = $recorded{$path};
			if ($was && $was->[0] eq $hash) { utime $was->[1], $was->[1], $path and $restored++ } else { $kept++ }
		}
		print "source-mtimes: $restored files as the build cache last saw them, $kept changed or new\n";' "$record"
	rm -f "$record"
	;;
*)
	echo "usage: $0 record|restore BUILD_DIR" >&2
	exit 2
	;;
esac
