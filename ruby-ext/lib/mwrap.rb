# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# The Mwrap module, compatible with the mwrap gem's API, over the
# libmwrap.so loaded in this process (by `mwrap ruby ...` or by
# `mwrap-attach -p PID --keep`).  Without libmwrap.so, `require "mwrap"`
# still works and every method raises Mwrap::NotLoaded.
require "mwrap_ext" # defines Mwrap::VERSION too, from the VERSION file
