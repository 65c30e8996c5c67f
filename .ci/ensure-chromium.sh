#!/bin/sh
# The browser tests need Chromium. Install it from Debian packages when we can, else say what to install.
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Chromium for the browser tests (apt-get install chromium chromium-driver)..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; then
    exit 0
  fi
fi
cat >&2 <<MSG
The browser tests need Chromium at $CHROMIUM and could not install it here.
Install it, then run 'make test' again:
  Debian/Ubuntu:  sudo apt-get install chromium chromium-driver
  elsewhere:      install Chromium or Chrome and set CHROMIUM=/path/to/chromium
To run every other test now:  make test-fast
MSG
exit 1
