(function(){
  var pages = document.querySelectorAll('template.page'), shown = -1;
  var hidden = {};
  function applyFilter(root){
    root.querySelectorAll('tr[data-severity]').forEach(function(tr){
      tr.style.display = hidden[tr.getAttribute('data-severity')] ? 'none' : '';
    });
  }
  function show(n){
    if(n === shown || n < 0 || n >= pages.length) return;
    var box = document.getElementById('pages');
    box.replaceChildren(pages[n].content.cloneNode(true));
    shown = n;
    document.getElementById('page-no').textContent = (n + 1) + ' / ' + pages.length;
    applyFilter(box); sortable(box);
  }
  function cell(tr, i){
    var td = tr.children[i]; if(!td) return '';
    var v = td.getAttribute('data-v'); return v === null ? td.textContent : parseFloat(v);
  }
  // The overview lays out its first rows only; the others wait in a template (all: every
  // row in the order shown, limit: how many are laid out).
  var overview = document.getElementById('overview'), more = document.getElementById('more-rows');
  var all = Array.prototype.slice.call(overview.tBodies[0].rows), limit = all.length;
  if(more) all = all.concat(Array.prototype.slice.call(more.content.querySelectorAll('tr')));
  function layOut(){
    var out = document.createDocumentFragment();
    all.slice(0, limit).forEach(function(r){ out.appendChild(r); });
    overview.tBodies[0].replaceChildren(out);
    var p = document.getElementById('more'); if(p && limit >= all.length) p.style.display = 'none';
  }
  function showAll(){ if(limit < all.length){ limit = all.length; layOut(); } }
  if(more) document.getElementById('show-all').addEventListener('click', showAll);
  function sortable(root){
    root.querySelectorAll('table.sortable').forEach(function(t){
      if(t.dataset.ready) return; t.dataset.ready = '1';
      t.querySelectorAll('th').forEach(function(th, i){
        th.addEventListener('click', function(){
          var rows = t === overview ? all : Array.prototype.slice.call(t.tBodies[0].rows);
          var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir > 0 ? 'asc' : 'desc';
          t.querySelectorAll('th').forEach(function(h){ delete h.dataset.sorted; });
          th.dataset.sorted = th.dataset.dir;
          var keys = new Map(rows.map(function(r){ return [r, cell(r, i)]; }));
          rows.sort(function(a, b){ var x = keys.get(a), y = keys.get(b);
            return (x < y ? -1 : x > y ? 1 : 0) * dir; });
          if(t === overview){ layOut(); return; }
          var out = document.createDocumentFragment();
          rows.forEach(function(r){ out.appendChild(r); });
          t.tBodies[0].appendChild(out);
        });
      });
    });
  }
  document.querySelectorAll('input[data-filter]').forEach(function(box){
    box.addEventListener('change', function(){
      hidden[box.getAttribute('data-filter')] = !box.checked; applyFilter(document);
    });
  });
  document.getElementById('prev').addEventListener('click', function(){ show(shown - 1); });
  document.getElementById('next').addEventListener('click', function(){ show(shown + 1); });
  // A detailed section lives in a page's template until shown: a link to one shows its page.
  function follow(){
    var id = decodeURIComponent(location.hash.slice(1));
    if(id && !document.getElementById(id) && all.some(function(r){ return r.id === id; })){
      showAll(); var row = document.getElementById(id); if(row) row.scrollIntoView(); return;
    }
    for(var n = 0; n < pages.length; n++){
      if(pages[n].content.getElementById(id)){
        show(n);
        var el = document.getElementById(id); if(el) el.scrollIntoView();
        return;
      }
    }
  }
  window.addEventListener('hashchange', follow);
  sortable(document);
  show(0);
  if(location.hash) follow();
  document.body.setAttribute('data-ready', '1');
})();
