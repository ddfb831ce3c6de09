"""URLs of team management (timeline/views/teams.py)."""

from django.urls import path

from timeline.views import teams

urlpatterns = [
    path("", teams.team_list, name="team_list"),
    path("new", teams.team_new, name="team_new"),
    path("<slug:slug>/", teams.team_detail, name="team_detail"),
    path("<slug:slug>/members/", teams.member_add, name="team_member_add"),
    path(
        "<slug:slug>/members/<int:user_id>/remove/",
        teams.member_remove,
        name="team_member_remove",
    ),
    path("<slug:slug>/members/<int:user_id>/admin/", teams.member_admin, name="team_member_admin"),
    path("<slug:slug>/tokens/", teams.token_issue, name="team_token_issue"),
    path("<slug:slug>/tokens/<int:token_id>/revoke/", teams.token_revoke, name="team_token_revoke"),
]
