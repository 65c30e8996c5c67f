#!/bin/sh
# The Chinese edition's figures are drawn in Noto Sans CJK SC (and the browser tests show them). Checked where it is
# used, by matplotlib (python -m snippets.lab.fonts, which makes matplotlib's font list anew when the font is
# installed but not listed there); installed from Debian packages when we can, else one line says what to install.
# Usage: ensure-fonts.sh [python]   (default: .venv/bin/python)
PY="${1:-.venv/bin/python}"
if "$PY" -m snippets.lab.fonts 2>/dev/null; then
  exit 0
fi
if ! fc-list 2>/dev/null | grep -q "Noto Sans CJK SC" && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing the CJK font for the Chinese edition's figures (apt-get install fonts-noto-cjk)..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null
fi
exec "$PY" -m snippets.lab.fonts
