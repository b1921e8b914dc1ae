#!/usr/bin/python3
# An independent count of a window's controls, for the desktop tools'
# coverage test: a plain pyatspi walk (libatspi, one call at a time, no
# cache) of every object of the window, applying the definition of a
# control in docs/desktop.md ("What counts as a control"). It shares no
# code with Saucer: where Saucer reads a toolkit's cache and asks a table
# for the cells at its corners, this walks every child and scans tables
# row by row from the first.
#
#   atspi_walk.py APP TITLE SCREEN_W SCREEN_H
#
# APP is the application's AT-SPI name, TITLE a substring of the window's
# name. It prints one JSON object: the window's box and the controls,
# each with its role, name and box relative to the window's top-left
# corner (as the application reports boxes), and for a table cell its
# row and column.
import json
import sys

import pyatspi

INTERACTIVE = {
    "push button", "toggle button", "check box", "radio button", "menu item",
    "check menu item", "radio menu item", "menu", "combo box", "entry", "text",
    "password text", "spin button", "slider", "page tab", "list item",
    "table cell", "tree item", "link", "terminal", "scroll bar",
    "push button menu", "document text", "paragraph", "table column header",
    "table row header", "column header", "row header",
}
READABLE = {"label", "static", "heading", "status bar", "alert", "notification", "caption"}
CONTAINER = {
    "panel", "filler", "scroll pane", "viewport", "split pane", "layered pane",
    "root pane", "glass pane", "internal frame", "option pane", "section",
    "grouping", "form", "tool bar", "menu bar", "page tab list", "table row",
    "document frame", "document web", "document spreadsheet",
    "document presentation", "document email", "redundant object", "embedded",
    "landmark", "article", "block quote", "description list", "application",
    "window", "frame", "dialog", "file chooser", "color chooser",
    "font chooser", "unknown", "invalid", "extended",
}
MAX_ROWS_SCANNED = 3000
MAX_CHILDREN = 5000

app_name, title = sys.argv[1], sys.argv[2]
screen = (0, 0, int(sys.argv[3]), int(sys.argv[4]))


def extents(o):
    try:
        e = o.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return (e.x, e.y, e.width, e.height)
    except NotImplementedError:
        return (0, 0, 0, 0)


def intersect(a, b):
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


def overlaps(box, area):
    r = intersect(box, area)
    return box[2] > 0 and box[3] > 0 and r[2] > 0 and r[3] > 0


def clean_name(name):
    # GTK 4.8 names an unnamed widget after its type (GtkButton, AdwGizmo).
    name = (name or "").strip()
    if (name.startswith("Gtk") or name.startswith("Adw")) and name[3:4].isupper() and name.isalnum():
        return ""
    return name


def actions(o):
    try:
        a = o.queryAction()
    except NotImplementedError:
        return []
    return [a.getName(i) for i in range(a.nActions) if "." not in a.getName(i)]


def text(o):
    try:
        return o.queryText().getText(0, 200).strip()
    except NotImplementedError:
        return ""


def has(o, iface):
    return iface in o.get_interfaces()


def is_control(o, role):
    if role in INTERACTIVE:
        return True
    if role in READABLE and clean_name(o.name):
        return True
    if has(o, "EditableText") or has(o, "Value"):
        return True
    if role in CONTAINER:
        return False
    return bool(actions(o)) or bool(text(o))


def find_window():
    for app in pyatspi.Registry.getDesktop(0):
        if app is None or app.name != app_name:
            continue
        for w in app:
            if w is not None and title in (w.name or ""):
                return app, w
    sys.exit("no window %r of %r" % (title, app_name))


app, win = find_window()
wbox = extents(win)
area = intersect(wbox, screen)
# A toolkit that sets SHOWING on its window but on none of the window's
# visible children (GTK 4) does not set it at all: VISIBLE stands in.
kids = [k for k in win if k is not None]
sets_showing = any(k.getState().contains(pyatspi.STATE_SHOWING) for k in kids) or not any(
    k.getState().contains(pyatspi.STATE_VISIBLE) for k in kids)
controls = []


def rel(box):
    return {"x": box[0] - wbox[0], "y": box[1] - wbox[1], "w": box[2], "h": box[3]}


def add(o, role, box, cell=None, table=None):
    c = {"role": role, "name": clean_name(o.name)}
    c.update(rel(box))
    if cell is not None:
        c["row"], c["column"] = cell
        c["table"] = rel(table)
    controls.append(c)


def shown(o, st, box):
    if sets_showing:
        return st.contains(pyatspi.STATE_SHOWING)
    # An object with no box at all (GTK 4's stack pages) only groups.
    return st.contains(pyatspi.STATE_VISIBLE) and (not has(o, "Component") or overlaps(box, area))


def table_cells(o, view, tbox):
    """Scans a table's rows from the first and its columns from the first,
    keeping the cells whose box overlaps the view."""
    t = o.queryTable()
    for c in range(min(t.nColumns, 500)):
        h = t.getColumnHeader(c)
        if h is not None:
            hb = extents(h)
            if h.getState().contains(pyatspi.STATE_SHOWING) and overlaps(hb, view):
                add(h, h.getRoleName(), hb)
    seen_rows = False
    for r in range(min(t.nRows, MAX_ROWS_SCANNED)):
        row_seen = False
        for c in range(min(t.nColumns, 500)):
            cell = t.getAccessibleAt(r, c)
            if cell is None:
                continue
            cb = extents(cell)
            if overlaps(cb, view):
                row_seen = True
                add(cell, cell.getRoleName(), cb, (r, c), tbox)
            elif row_seen:
                break  # past the view's right edge
        if row_seen:
            seen_rows = True
        elif seen_rows:
            break  # past the view's bottom
    return


def walk(o, depth):
    for i in range(min(o.childCount, MAX_CHILDREN)):
        k = o.getChildAtIndex(i)
        if k is None:
            continue
        st = k.getState()
        box = extents(k)
        if not shown(k, st, box):
            continue
        role = k.getRoleName()
        if st.contains(pyatspi.STATE_MANAGES_DESCENDANTS) and has(k, "Table"):
            table_cells(k, intersect(box, area), box)
            if overlaps(box, area) and is_control(k, role):
                add(k, role, box)
            continue
        if overlaps(box, area) and is_control(k, role):
            add(k, role, box)
        walk(k, depth + 1)


walk(win, 0)
print(json.dumps({"window": rel(wbox), "sets_showing": sets_showing, "controls": controls}))
