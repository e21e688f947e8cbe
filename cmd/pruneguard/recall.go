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
}

func recallFlagSet() (*flag.FlagSet, recallFlags) {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	return fs, recallFlags{
		spill: fs.String("spill", "", "the directory a prune spilled to (required)"),
	}
}

// runRecall prints the messages a prune spilled under one key, as the
// input body held them.
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
