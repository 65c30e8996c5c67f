#!/bin/sh
# The Chinese edition's figures are drawn in Noto Sans CJK SC (and the browser tests show them): install it from
# Debian packages when we can, else say what to install.
if fc-list 2>/dev/null | grep -q "Noto Sans CJK SC"; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing the CJK font for the Chinese edition's figures (apt-get install fonts-noto-cjk)..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; then
    rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/matplotlib"  # matplotlib lists fonts once and caches the list
    exit 0
  fi
fi
cat >&2 <<MSG
The Chinese edition's figures need the font Noto Sans CJK SC, which is not installed and could not be installed here.
  Debian/Ubuntu:  sudo apt-get install fonts-noto-cjk
  macOS:          brew install --cask font-noto-sans-cjk-sc
  elsewhere:      install Noto Sans CJK SC from https://github.com/notofonts/noto-cjk
then remove matplotlib's font cache (rm -rf ~/.cache/matplotlib) and run the command again.
MSG
exit 1
