package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// recallFlags are the recall command's flags.
type recallFlags struct {
	spill *string
	query *string
	page  *int
}

func recallFlagSet() (*flag.FlagSet, recallFlags) {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	return fs, recallFlags{
		spill: fs.String("spill", "", "the directory a prune spilled to (required)"),
		query: fs.String("query", "", "words to search the directory's messages for, in place of a KEY: prints the answer the recall tool gives a model"),
		page:  fs.Int("page", 1, "with --query, the page of the answer to print, from 1"),
	}
}

// runRecall prints the messages a prune spilled under one key, as the
// input body held them, or the recall tool's answer to a query.
func runRecall(args []string, stdout, stderr io.Writer) int {
	fs, f := recallFlagSet()
	pos, err := parse(fs, args)
	if err != nil {
		return flagError("recall", err, stdout, stderr)
	}
	switch {
	case *f.spill == "":
		errorf(stderr, "recall needs --spill DIR")
		return 2
	case *f.query != "" && len(pos) != 0:
		errorf(stderr, "recall takes a KEY or --query, not both")
		return 2
	case *f.query != "":
		return recallQuery(*f.spill, *f.query, *f.page, stdout, stderr)
	case len(pos) != 1:
		errorf(stderr, "recall takes one KEY")
		return 2
	}
	// The key as a prune report gives it, or as a pointer line shows it.
	key := strings.TrimPrefix(pos[0], spill.DefaultName+":")
	s := &spill.Spiller{Store: spill.Dir(*f.spill)}
	ms, err := s.Recall(context.Background(), pruneguard.Pointer{Store: spill.DefaultName, Key: key})
	if err != nil {
		errorf(stderr, "recall: %v", err)
		return 2
	}
	w := bufio.NewWriter(stdout)
	w.WriteByte('[')
	for i, m := range ms {
		if !json.Valid(m.Content) {
			errorf(stderr, "recall: %s", errors.New("entry "+key+" holds a message that is not a request body's JSON (message "+string(m.ID)+")"))
			return 2
		}
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(m.Content)
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		errorf(stderr, "recall: %v", err)
		return 2
	}
	return 0
}

// recallQuery prints page of the answer the recall tool gives a model
// for query, from the segments in dir.
func recallQuery(dir, query string, page int, stdout, stderr io.Writer) int {
	args, _ := json.Marshal(map[string]any{"query": query, "page": page})
	s := &spill.Spiller{Store: spill.Dir(dir)}
	out, err := s.HandleRecall(context.Background(), args)
	if err != nil {
		errorf(stderr, "recall: %v", err)
		return 2
	}
	if _, err := io.WriteString(stdout, out+"\n"); err != nil {
		errorf(stderr, "recall: %v", err)
		return 2
	}
	return 0
}
