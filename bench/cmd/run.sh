#!/usr/bin/env bash
# Measures pruneguard prune against a naive drop-oldest trimmer and
# LangChain's trimMessages on generated OpenAI Chat bodies, with public
# tools only: each command's own timing line, and /usr/bin/time -v for the
# whole process. Run from the repository root:
#
#   npm install --prefix bench/cmd      # @langchain/core, once
#   bash bench/cmd/run.sh [RUNS]        # 5 runs of each by default
#
# Bodies of 20,000 and 200,000 messages are written to $TMPDIR. Budgets:
# half of the input tokens, and nine tenths. Unannotated tools and text are
# taken as reconstructible (--unannotated regenerable --text reconstructible),
# so that the guard may drop what the trimmers drop. The medians are printed.
set -euo pipefail
runs=${1:-5}
dir=${TMPDIR:-/tmp}/pruneguard-bench
mkdir -p "$dir"
go build -o "$dir/pruneguard" ./cmd/pruneguard
go build -o "$dir/genchat" ./bench/cmd/genchat
for n in 20000 200000; do
	[ -s "$dir/chat-$n.json" ] || "$dir/genchat" -messages $n > "$dir/chat-$n.json"
done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { grep -o "\"$1\":[0-9.]*" | cut -d: -f2; }
tokens=$("$dir/pruneguard" prune --budget 1000000000 "$dir/chat-20000.json" 2>&1 >/dev/null | field input_tokens)

for pct in 50 90; do
	for n in 20000 200000; do
		body="$dir/chat-$n.json"
		budget=$((tokens * n / 20000 * pct / 100))
		: > "$dir/pg.txt"; : > "$dir/pg-time.txt"
		for _ in $(seq "$runs"); do
			/usr/bin/time -v "$dir/pruneguard" prune --budget $budget --unannotated regenerable --text reconstructible --dialect openai-chat "$body" \
				2>"$dir/err.txt" >/dev/null || true
			head -1 "$dir/err.txt" >> "$dir/pg.txt"
			grep -E 'Elapsed|Maximum resident|User time' "$dir/err.txt" | tr '\n' ' ' >> "$dir/pg-time.txt"
			echo >> "$dir/pg-time.txt"
		done
		echo "pruneguard prune, $n messages, budget $pct% ($budget tokens), $(wc -c < "$body") bytes:"
		echo "  read_ms $(field read_ms < "$dir/pg.txt" | median)  prune_ms $(field prune_ms < "$dir/pg.txt" | median)  write_ms $(field write_ms < "$dir/pg.txt" | median)"
		echo "  user s $(grep -o 'User time (seconds): [0-9.]*' "$dir/pg-time.txt" | awk '{print $4}' | median)  wall $(grep -o 'Elapsed (wall clock) time (h:mm:ss or m:ss): [0-9:.]*' "$dir/pg-time.txt" | awk '{print $8}' | median)  peak KB $(grep -o 'Maximum resident set size (kbytes): [0-9]*' "$dir/pg-time.txt" | awk '{print $6}' | median)"
		if [ $n = 20000 ]; then
			: > "$dir/js.txt"
			for _ in $(seq "$runs"); do
				node bench/cmd/trim-naive.mjs "$body" $budget 2>>"$dir/js.txt" >/dev/null
			done
			echo "  naive JS trimmer: parse_ms $(field parse_ms < "$dir/js.txt" | median)  trim_ms $(field trim_ms < "$dir/js.txt" | median)  write_ms $(field write_ms < "$dir/js.txt" | median)"
			node bench/cmd/trim-langchain.mjs "$body" $budget 2>"$dir/lc.txt" >/dev/null
			echo "  LangChain trimMessages (one run): trim_ms $(field trim_ms < "$dir/lc.txt")"
		fi
	done
done
