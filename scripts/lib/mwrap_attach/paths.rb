# SPDX-License-Identifier: MIT
# frozen_string_literal: true

# Where our own files are, and names for the files we make.
module MwrapAttach
  # The directory of the mwrap-attach script: scripts/ in the source
  # tree, $(PREFIX)/bin installed; ROOT is the one above it.  This file
  # sits two levels below it in both (lib/mwrap_attach/).
  SCRIPT_DIR = File.expand_path("../..", __dir__)
  ROOT = File.expand_path("..", SCRIPT_DIR)

  O_PATH = 0o10000000	# Linux, every architecture; Ruby has no constant

  # NAME as `make` leaves it in ROOT/SOURCE_DIR, else as `make install`
  # puts it in $(PREFIX)/lib/mwrap-attach; nil when neither exists.
  # TEST is the File predicate the file must pass (:file?, :executable?).
  def self.our_file(source_dir, name, test: :file?)
    [File.join(ROOT, source_dir, name),
     File.join(ROOT, "lib", "mwrap-attach", name)].find { |f| File.public_send(test, f) }
  end

  # A name no one can guess in advance (16 hex digits from getrandom).
  def self.random_word
    Random.urandom(8).unpack1("H*")
  end
end
