#ifndef BREAKING_NEWS_CNCURSESW_SHIM_H
#define BREAKING_NEWS_CNCURSESW_SHIM_H

// SwiftPM drops the -D flags pkg-config gives, so the wide-character API is enabled here.
#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif

#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

#endif
