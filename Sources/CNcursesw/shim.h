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

// Globals and macros of curses, as functions Swift can call without touching shared
// mutable C globals.
static inline WINDOW *bn_stdscr(void) { return stdscr; }
static inline int bn_lines(void) { return getmaxy(stdscr); }
static inline int bn_cols(void) { return getmaxx(stdscr); }
static inline int bn_attr_bold(void) { return A_BOLD; }
static inline int bn_attr_reverse(void) { return A_REVERSE; }
static inline int bn_attr_underline(void) { return A_UNDERLINE; }
static inline int bn_attr_dim(void) { return A_DIM; }
static inline int bn_color_pair(int n) { return COLOR_PAIR(n); }
static inline int bn_has_colors(void) { return has_colors(); }
static inline int bn_key_code_yes(void) { return KEY_CODE_YES; }
static inline int bn_key_max(void) { return KEY_MAX; }
static inline int bn_wcwidth(wchar_t c) { return wcwidth(c); }
static inline unsigned long bn_all_mouse_events(void) { return ALL_MOUSE_EVENTS; }
static inline unsigned long bn_button1_clicked(void) { return BUTTON1_CLICKED | BUTTON1_PRESSED; }

// Whether terminfo knows the terminal type `name` (*known) and whether it can draw a full
// screen: it must move the cursor and clear. Leaves no terminal set up behind it.
#include <ncursesw/term.h>
static inline int bn_terminal_can_draw(const char *name, int *known) {
    int error = 0;
    *known = 0;
    if (setupterm(name, 1, &error) != OK) return 0;
    *known = 1;
    char *move_to = tigetstr("cup");
    char *erase_all = tigetstr("clear");
    int usable = move_to != NULL && move_to != (char *)-1 && erase_all != NULL && erase_all != (char *)-1;
    del_curterm(cur_term);
    cur_term = NULL;
    return usable;
}

#endif
